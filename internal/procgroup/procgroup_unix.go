//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// Set runs the command in its own process group so that cancelling it
// kills everything it started, not only the first process.
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
