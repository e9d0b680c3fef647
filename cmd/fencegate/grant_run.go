package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

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

// grantRunOpts are the flags of "fencegate grant run".
type grantRunOpts struct {
	conn             connFlags
	resource         string
	reqID, opClass   string
	ttl, wait, grace time.Duration
}

func newGrantRunCmd(a *app) *cobra.Command {
	var o grantRunOpts
	c := &cobra.Command{
		Use:   "run --resource R [--ttl D] [--wait D] [--grace D] [--request-id ID] -- CMD [ARGS...]",
		Short: "run a command while holding a lease, like 'etcdctl lock' or 'consul lock'",
		Long: fmt.Sprintf(`Hold a lease on --resource while CMD runs. CMD gets %s, %s, %s, %s,
%s, %s, %s and %s in its environment.
When ownership is lost CMD gets SIGTERM, then SIGKILL after --grace, and
grant run exits %d. Otherwise it exits with CMD's code (127 when CMD cannot
be started).`, envGrant, envLease, envFence, envResource, envRoot, envGrantDigest, envRequestID, envTTL, exitOwnershipLost),
		Args: func(cmd *cobra.Command, args []string) error {
			if o.resource == "" || len(args) == 0 {
				return usagef(cmd, "--resource and a command (after --) are required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return grantRun(cmd, &o, args) },
	}
	o.conn.add(c.Flags(), false)
	f := c.Flags()
	f.StringVar(&o.resource, "resource", "", "canonical resource ID to hold while CMD runs")
	f.DurationVar(&o.ttl, "ttl", client.DefaultTTL, "lease TTL; renewed every TTL/3 while CMD runs")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long for the current holder to release or expire")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "after SIGTERM, wait this long before SIGKILL")
	f.StringVar(&o.reqID, "request-id", "", "acquire request ID (default: random); a lost answer is recovered by it")
	f.StringVar(&o.opClass, "op-class", "", "operation class (default write)")
	f.SetInterspersed(false)
	return c
}

// grantRun holds a lease while a command runs, like 'etcdctl lock' or
// 'consul lock': acquire (optionally waiting), start CMD with the grant in
// its environment, renew while it runs, and stop it (SIGTERM, then SIGKILL
// after --grace) as soon as ownership is no longer known. Exit code: the
// command's, or 75 when ownership was lost.
func grantRun(cmd *cobra.Command, o *grantRunOpts, argv []string) error {
	ctx := cmd.Context()
	c, err := o.conn.client()
	if err != nil {
		return err
	}
	opts := []client.HoldOption{client.WithTTL(o.ttl), client.WithWait(o.wait)}
	if o.reqID != "" {
		opts = append(opts, client.WithRequestID(o.reqID))
	}
	if o.opClass != "" {
		opts = append(opts, client.WithOpClass(o.opClass))
	}
	h, err := c.Hold(ctx, o.resource, opts...)
	if err != nil {
		var ae *client.AcquireUnknownError
		if errors.As(err, &ae) {
			return callFailed(err, o.conn.target(), fmt.Sprintf("The outcome is unknown: reconcile with 'fencegate grant lookup --request-id %s'.", ae.RequestID))
		}
		return callFailed(err, o.conn.target(), "")
	}
	errOut := cmd.ErrOrStderr()
	release := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Release(rctx); err != nil {
			fmt.Fprintf(errOut, "fencegate grant run: release: %v (the lease expires by its TTL)\n", err)
		}
	}

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), errOut
	setGroup(child)
	child.Env = append(os.Environ(),
		envGrant+"="+h.Grant(),
		envGrantDigest+"="+h.GrantDigest(),
		envLease+"="+h.LeaseID(),
		envFence+"="+strconv.FormatUint(h.Fence(), 10),
		envResource+"="+h.Resource(),
		envRoot+"="+h.OperationRoot(),
		envRequestID+"="+h.RequestID(),
		envTTL+"="+o.ttl.String(),
	)
	if err := h.Usable(); err != nil { // the last look before CMD can produce anything
		release()
		return withExit(exitOwnershipLost, fmt.Errorf("ownership lost before the command started, it was not started: %w", err), "")
	}
	if err := child.Start(); err != nil {
		release()
		return withExit(exitCannotRun, fmt.Errorf("start %s: %w", argv[0], err), "")
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	return superviseCommand(ctx, h, child, exited, o.grace, argv[0], release)
}

// superviseCommand waits for the command to exit, stopping it when
// ownership is lost or ctx ends, then releases the lease.
func superviseCommand(ctx context.Context, h *client.Holder, child *exec.Cmd, exited chan error, grace time.Duration, name string, release func()) error {
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
			waitErr = stopCommand(child, exited, grace)
		}
	}
	release()
	code := exitCode(waitErr)
	switch {
	case lost != nil:
		return withExit(exitOwnershipLost, fmt.Errorf("%v; stopped %s", lost, name), "")
	case code != 0:
		return &cliError{exit: code, err: fmt.Errorf("%s exited with status %d", name, code), class: classCommandExit}
	}
	return nil
}

// classCommandExit is the class of grant run's failure when its command
// exited non-zero: the exit code is the command's own.
const classCommandExit = "command-exit"

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
