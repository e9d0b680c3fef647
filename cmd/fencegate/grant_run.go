package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

// exitOwnershipLost is grant run's exit code when the lease was lost while
// the command ran (EX_TEMPFAIL: try again later). The command's own code
// is returned otherwise.
const exitOwnershipLost = 75

// Environment variables grant run passes to the command.
const (
	envGrant       = "FENCEGATE_GRANT"
	envGrantDigest = "FENCEGATE_GRANT_DIGEST"
	envLease       = "FENCEGATE_LEASE"
	envFence       = "FENCEGATE_FENCE"
	envResource    = "FENCEGATE_RESOURCE"
	envRoot        = "FENCEGATE_OPERATION_ROOT"
	envRequestID   = "FENCEGATE_REQUEST_ID"
	envTTL         = "FENCEGATE_LEASE_TTL"
)

const grantRunUsage = "--resource R [--ttl D] [--wait D] [--grace D] [--request-id ID] -- CMD [ARGS...]"

// grantRun holds a lease while a command runs, like 'etcdctl lock' or
// 'consul lock': acquire (optionally waiting), start CMD with the grant in
// its environment, renew while it runs, and stop it (SIGTERM, then SIGKILL
// after --grace) as soon as ownership is no longer known. Exit code: the
// command's, or 75 when ownership was lost.
func grantRun(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("grant run", grantRunUsage)
	var conn connFlags
	conn.add(fs)
	resource := fs.String("resource", "", "canonical resource ID to hold while CMD runs")
	ttl := fs.Duration("ttl", client.DefaultTTL, "lease TTL; renewed every TTL/3 while CMD runs")
	wait := fs.Duration("wait", 0, "wait up to this long for the current holder to release or expire")
	grace := fs.Duration("grace", 10*time.Second, "after SIGTERM, wait this long before SIGKILL")
	reqID := fs.String("request-id", "", "acquire request ID (default: random); a lost answer is recovered by it")
	opClass := fs.String("op-class", "", "operation class (default write)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fencegate grant run %s\n\n", grantRunUsage)
		fmt.Fprintf(fs.Output(), "Holds a lease on --resource while CMD runs. CMD gets %s, %s, %s, %s,\n", envGrant, envLease, envFence, envResource)
		fmt.Fprintf(fs.Output(), "%s, %s, %s and %s in its environment.\n", envRoot, envGrantDigest, envRequestID, envTTL)
		fmt.Fprintf(fs.Output(), "When ownership is lost CMD gets SIGTERM, then SIGKILL after --grace, and grant run exits %d.\n", exitOwnershipLost)
		fmt.Fprintf(fs.Output(), "Otherwise it exits with CMD's code.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, true); err != nil {
		return err
	}
	argv := fs.Args()
	if *resource == "" || len(argv) == 0 {
		fs.Usage()
		return &exitError{2, errors.New("--resource and a command are required")}
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	opts := []client.HoldOption{client.WithTTL(*ttl), client.WithWait(*wait)}
	if *reqID != "" {
		opts = append(opts, client.WithRequestID(*reqID))
	}
	if *opClass != "" {
		opts = append(opts, client.WithOpClass(*opClass))
	}
	h, err := c.Hold(ctx, *resource, opts...)
	if err != nil {
		var ae *client.AcquireUnknownError
		if errors.As(err, &ae) {
			return fmt.Errorf("%w\nreconcile with 'fencegate grant lookup --request-id %s'", err, ae.RequestID)
		}
		return err
	}
	release := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Release(rctx); err != nil {
			fmt.Fprintf(os.Stderr, "fencegate grant run: release: %v (the lease expires by its TTL)\n", err)
		}
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out, os.Stderr
	setGroup(cmd)
	cmd.Env = append(os.Environ(),
		envGrant+"="+h.Grant(),
		envGrantDigest+"="+h.GrantDigest(),
		envLease+"="+h.LeaseID(),
		envFence+"="+strconv.FormatUint(h.Fence(), 10),
		envResource+"="+h.Resource(),
		envRoot+"="+h.OperationRoot(),
		envRequestID+"="+h.RequestID(),
		envTTL+"="+ttl.String(),
	)
	if err := h.Usable(); err != nil { // the last look before CMD can produce anything
		release()
		return &exitError{exitOwnershipLost, fmt.Errorf("ownership lost before the command started: %w", err)}
	}
	if err := cmd.Start(); err != nil {
		release()
		return &exitError{127, fmt.Errorf("start %s: %w", argv[0], err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var lost, interrupted error
	var waitErr error
	done := false
	for !done {
		st, changed := h.Watch()
		if !st.Usable() {
			lost = fmt.Errorf("ownership lost (state %s): %v", st, h.Err())
			break
		}
		select {
		case waitErr = <-exited:
			done = true
		case <-changed:
		case <-ctx.Done():
			interrupted = ctx.Err()
			done = true
		}
	}
	if lost != nil || interrupted != nil {
		if waitErr == nil {
			waitErr = stopCommand(cmd, exited, *grace)
		}
	}
	release()
	code := exitCode(waitErr)
	switch {
	case lost != nil:
		return &exitError{exitOwnershipLost, fmt.Errorf("%v; stopped %s", lost, argv[0])}
	case code != 0:
		return &exitError{code, fmt.Errorf("%s exited with status %d", argv[0], code)}
	}
	return nil
}

// stopCommand sends SIGTERM to the command's process group, waits up to
// grace, then SIGKILLs the group. After the command itself exits, what is
// left of its group is killed too: nothing it started may outlive the lease.
func stopCommand(cmd *exec.Cmd, exited <-chan error, grace time.Duration) error {
	if err := signalGroup(cmd, syscall.SIGTERM); err != nil {
		_ = signalGroup(cmd, syscall.SIGKILL)
	}
	t := clock.Real().NewTimer(grace)
	defer t.Stop()
	var err error
	select {
	case err = <-exited:
	case <-t.C():
		_ = signalGroup(cmd, syscall.SIGKILL)
		err = <-exited
	}
	_ = signalGroup(cmd, syscall.SIGKILL)
	return err
}

// exitCode is a command's exit code; 128+N when killed by signal N.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ee.ExitCode(); c > 0 {
		return c
	}
	return 1
}
