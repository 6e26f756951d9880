//go:build !unix

package backend

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func exitStatus(e *exec.ExitError) int { return e.ExitCode() }

func runAs(*exec.Cmd, int, int) {}
