//go:build !unix

package procgroup

import "os/exec"

// Set leaves the command as it is where there are no process groups.
func Set(*exec.Cmd) {}
