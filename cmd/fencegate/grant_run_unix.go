//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setGroup runs the command in a process group of its own, so that losing
// the lease stops the whole tree: a grandchild must not go on writing.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the command's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// pauseGroup stops the command's process group (SIGSTOP): it produces
// nothing until resumeGroup.
func pauseGroup(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGSTOP) }

// resumeGroup continues a paused process group (SIGCONT).
func resumeGroup(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGCONT) }
