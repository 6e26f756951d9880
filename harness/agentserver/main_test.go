package agentserver_test

import (
	"testing"

	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if a test dials anything but loopback: served
// agents and their async subagents must never reach the network here.
func TestMain(m *testing.M) { netguard.Main(m) }
