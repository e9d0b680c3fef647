//go:build !unix

package main

import (
	"os/exec"
	"syscall"
)

// setGroup does nothing where process groups do not exist.
func setGroup(*exec.Cmd) {}

// signalGroup signals the command itself.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return cmd.Process.Kill()
	}
	return cmd.Process.Signal(sig)
}
