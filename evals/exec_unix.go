//go:build unix

package evals

import (
	"os/exec"
	"syscall"
)

// killGroup runs the command in its own process group so that a timeout
// kills everything it started, not only the first process.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
