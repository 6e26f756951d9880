//go:build !unix

package harness_test

import "time"

// processCPU is unknown here; the CPU metrics are then not reported.
func processCPU() time.Duration { return 0 }
