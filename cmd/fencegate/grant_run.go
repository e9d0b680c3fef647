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
	envStatus      = "FENCEGATE_STATUS"      // with --proof-file: the first proof
	envStatusFile  = "FENCEGATE_STATUS_FILE" // with --proof-file: its path
)

// --on-unknown's values.
const (
	onUnknownPause = "pause"
	onUnknownStop  = "stop"
)

// grantRunOpts are the flags of "fencegate grant run".
type grantRunOpts struct {
	conn             connFlags
	resource         string
	reqID, opClass   string
	ttl, wait, grace time.Duration
	onUnknown        string        // pause or stop
	proofFile        string        // where the status proof is kept fresh ("": none)
	proofMaxAge      time.Duration // the proof-mode route's status.maxAge
}

func newGrantRunCmd(a *app) *cobra.Command {
	var o grantRunOpts
	c := &cobra.Command{
		Use:   "run --resource R [--ttl D] [--wait D] [--grace D] [--request-id ID] -- CMD [ARGS...]",
		Short: "run a command while holding a lease, like 'etcdctl lock' or 'consul lock'",
		Long: fmt.Sprintf(`Hold a lease on --resource while CMD runs. CMD gets %s, %s, %s, %s,
%s, %s, %s and %s in its environment.

--wait waits for the current holder to release or expire, as long as asked
(the registry bounds one waiting request, so longer waits are sent as
successive requests); waiting does not eat the lease's TTL.

While CMD runs the lease is renewed every TTL/3. A renewal that fails (the
registry restarting, a network blip) leaves ownership unknown: with
--on-unknown pause (the default) CMD's process group is stopped (SIGSTOP) so
that it produces nothing meanwhile, and continued (SIGCONT) as soon as the
registry confirms the lease again; with --on-unknown stop it is stopped for
good at once. When ownership is lost (expired, revoked, released, a newer
owner's fence accepted, or the local deadline passed without a confirmed
renewal) CMD gets SIGTERM, then SIGKILL after --grace, and grant run exits %d.
Otherwise it exits with CMD's code (127 when CMD cannot be started).

For sidecar routes in proof mode, --proof-file FILE keeps a fresh status
proof in FILE (rewritten atomically, at most half of --proof-max-age old);
CMD gets its path in %s and the first proof in %s (fresh for a
short command only: read the file before each write).`, envGrant, envLease, envFence, envResource, envRoot, envGrantDigest, envRequestID, envTTL, exitOwnershipLost, envStatusFile, envStatus),
		Args: func(cmd *cobra.Command, args []string) error {
			if o.resource == "" || len(args) == 0 {
				return usagef(cmd, "--resource and a command (after --) are required")
			}
			if o.onUnknown != onUnknownPause && o.onUnknown != onUnknownStop {
				return usagef(cmd, "--on-unknown must be pause or stop, not %q", o.onUnknown)
			}
			if o.wait < 0 || o.proofMaxAge < 0 {
				return usagef(cmd, "--wait and --proof-max-age must not be negative")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return grantRun(cmd, &o, args) },
	}
	o.conn.add(c.Flags(), false)
	f := c.Flags()
	f.StringVar(&o.resource, "resource", "", "canonical resource ID to hold while CMD runs")
	f.DurationVar(&o.ttl, "ttl", client.DefaultTTL, "lease TTL; renewed every TTL/3 while CMD runs")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long for the current holder to release or expire (no upper bound)")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "after SIGTERM, wait this long before SIGKILL")
	f.StringVar(&o.reqID, "request-id", "", "acquire request ID (default: random); a lost answer is recovered by it")
	f.StringVar(&o.opClass, "op-class", "", "operation class (default write)")
	f.StringVar(&o.onUnknown, "on-unknown", onUnknownPause, "while ownership is unknown (a renewal failed): pause CMD until it is confirmed again, or stop it")
	f.StringVar(&o.proofFile, "proof-file", "", "keep a fresh status proof in this file for proof-mode routes (CMD gets its path in "+envStatusFile+")")
	f.DurationVar(&o.proofMaxAge, "proof-max-age", client.DefaultProofMaxAge, "the proof-mode route's status.maxAge (with --proof-file)")
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
	var proofs *proofFile
	if o.proofFile != "" {
		proofs = &proofFile{h: h, path: o.proofFile, maxAge: o.proofMaxAge}
		first, err := proofs.refresh(ctx)
		if err != nil {
			release()
			return withExit(exitOwnershipLost, fmt.Errorf("no status proof before the command started, it was not started: %w", err), "")
		}
		child.Env = append(child.Env, envStatus+"="+first, envStatusFile+"="+o.proofFile)
	}
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
	sv := &supervisor{h: h, child: child, exited: exited, grace: o.grace, name: argv[0],
		pauseOnUnknown: o.onUnknown == onUnknownPause, proofs: proofs, log: errOut}
	err = sv.run(ctx)
	release()
	return err
}

// classCommandExit is the class of grant run's failure when its command
// exited non-zero: the exit code is the command's own.
const classCommandExit = "command-exit"

// stopCommand sends SIGTERM to the command's process group, waits up to
// grace (continuing it first, should it be paused), then SIGKILLs the
// group. After the command itself exits, what is
// left of its group is killed too: nothing it started may outlive the lease.
func stopCommand(cmd *exec.Cmd, exited <-chan error, grace time.Duration) error {
	if err := signalGroup(cmd, syscall.SIGTERM); err != nil {
		_ = signalGroup(cmd, syscall.SIGKILL)
	}
	// A paused group gets its SIGTERM once continued.
	_ = resumeGroup(cmd)
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
