//go:build !unix

package main

import (
	"errors"
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

// errNoPause: a process cannot be paused here; grant run stops it instead.
var errNoPause = errors.New("no SIGSTOP on this platform")

func pauseGroup(*exec.Cmd) error  { return errNoPause }
func resumeGroup(*exec.Cmd) error { return errNoPause }
