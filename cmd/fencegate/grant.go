package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/client"
)

func newGrantCmd(a *app) *cobra.Command {
	return groupCmd("grant", "acquire, renew, release, look up, inspect grants; run a command under a lease",
		newGrantAcquireCmd(a),
		newGrantLookupCmd(a),
		newGrantRenewCmd(a),
		newGrantReleaseCmd(a),
		newGrantStatusCmd(a),
		newGrantInspectCmd(a),
		newGrantRunCmd(a),
	)
}

// grantOutFlags say where the bearer grant goes: never to stdout unless
// asked (it is a credential).
type grantOutFlags struct {
	grantOut   string
	printGrant bool
}

func (g *grantOutFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.grantOut, "grant-out", "", "write the grant (JWS, a bearer credential) to this file, mode 0600")
	cmd.Flags().BoolVar(&g.printGrant, "print-grant", false, "also print the grant (a bearer credential) on stdout; by default it is not printed")
}

type grantAcquireOpts struct {
	conn                     connFlags
	out                      grantOutFlags
	resource, reqID, opClass string
	ttl, wait                time.Duration
}

func newGrantAcquireCmd(a *app) *cobra.Command {
	var o grantAcquireOpts
	c := &cobra.Command{
		Use:   "acquire --resource R [--ttl D] [--wait D] [--request-id ID] [--grant-out FILE]",
		Short: "acquire a lease on a resource and its grant",
		Long: `Acquire a lease on a resource. The grant (a bearer credential) is written to
--grant-out, and printed only with --print-grant. When the answer is lost
(no answer, the request may have reached the registry), recover it with
'fencegate grant lookup --request-id ID': the ID is printed with the error.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return grantAcquire(cmd, a, &o) },
	}
	o.conn.add(c.Flags(), false)
	o.out.add(c)
	f := c.Flags()
	f.StringVar(&o.resource, "resource", "", "canonical resource ID (e.g. invoice-batch/2026-07-19)")
	f.DurationVar(&o.ttl, "ttl", 0, "lease TTL (default: the registry's)")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long for the current holder to release or expire (no upper bound: sent as requests of at most 30s)")
	f.StringVar(&o.reqID, "request-id", "", "request ID; reuse it to recover a lost answer (default: random)")
	f.StringVar(&o.opClass, "op-class", "", "operation class (default write)")
	return c
}

func grantAcquire(cmd *cobra.Command, a *app, o *grantAcquireOpts) error {
	if o.resource == "" {
		return usagef(cmd, "--resource is required")
	}
	if o.wait < 0 {
		return usagef(cmd, "--wait %s must not be negative", o.wait)
	}
	if o.reqID == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		o.reqID = "req-" + hex.EncodeToString(b)
	}
	c, err := o.conn.client()
	if err != nil {
		return err
	}
	l, err := acquireWaiting(cmd.Context(), c, client.AcquireRequest{Resource: o.resource, RequestID: o.reqID, TTL: o.ttl, OpClass: o.opClass}, o.wait)
	if err != nil {
		return callFailed(err, o.conn.target(), fmt.Sprintf("The outcome is unknown: recover it with 'fencegate grant lookup --request-id %s' (same --registry and --owner).", o.reqID))
	}
	return printLease(cmd.OutOrStdout(), a, l, &o.out)
}

type grantLookupOpts struct {
	conn  connFlags
	out   grantOutFlags
	reqID string
}

func newGrantLookupCmd(a *app) *cobra.Command {
	var o grantLookupOpts
	c := &cobra.Command{
		Use:   "lookup --request-id ID",
		Short: "look up the lease of an acquire whose answer was lost",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.reqID == "" {
				return usagef(cmd, "--request-id is required")
			}
			c, err := o.conn.client()
			if err != nil {
				return err
			}
			l, err := c.Lookup(cmd.Context(), o.reqID)
			if err != nil {
				return callFailed(err, o.conn.target(), "")
			}
			return printLease(cmd.OutOrStdout(), a, l, &o.out)
		},
	}
	o.conn.add(c.Flags(), false)
	o.out.add(c)
	c.Flags().StringVar(&o.reqID, "request-id", "", "the request ID of the acquire whose answer was lost")
	return c
}

// leaseOpts are the flags of renew, release and status.
type leaseOpts struct {
	conn          connFlags
	lease, digest string
	ttl           time.Duration
}

func newGrantRenewCmd(a *app) *cobra.Command {
	var o leaseOpts
	c := &cobra.Command{
		Use:   "renew --lease ID [--ttl D] --owner NAME",
		Short: "renew a lease you hold",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.lease == "" {
				return usagef(cmd, "--lease is required")
			}
			if o.ttl != 0 && o.ttl < time.Millisecond {
				// Sent as whole milliseconds: a shorter TTL would turn into
				// 0, which renews by the lease's own TTL.
				return usagef(cmd, "--ttl must be at least 1ms (omit it to keep the lease's own TTL)")
			}
			return leaseCall(cmd, a, &o, func(c *client.Client) (*client.Lease, error) { return c.Renew(cmd.Context(), o.lease, o.ttl) })
		},
	}
	o.conn.add(c.Flags(), false)
	c.Flags().StringVar(&o.lease, "lease", "", "lease ID")
	c.Flags().DurationVar(&o.ttl, "ttl", 0, "new TTL from now (default: the lease's own TTL, as granted)")
	return c
}

func newGrantReleaseCmd(a *app) *cobra.Command {
	var o leaseOpts
	c := &cobra.Command{
		Use:   "release --lease ID --owner NAME",
		Short: "release a lease you hold",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.lease == "" {
				return usagef(cmd, "--lease is required")
			}
			return leaseCall(cmd, a, &o, func(c *client.Client) (*client.Lease, error) { return c.Release(cmd.Context(), o.lease) })
		},
	}
	o.conn.add(c.Flags(), false)
	c.Flags().StringVar(&o.lease, "lease", "", "lease ID")
	return c
}

func newGrantStatusCmd(a *app) *cobra.Command {
	var o leaseOpts
	c := &cobra.Command{
		Use:   "status --lease ID | --digest sha256:...",
		Short: "a lease's state and a fresh status proof",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (o.lease == "") == (o.digest == "") {
				return usagef(cmd, "give one of --lease or --digest")
			}
			return leaseCall(cmd, a, &o, func(c *client.Client) (*client.Lease, error) {
				if o.lease != "" {
					return c.Status(cmd.Context(), o.lease)
				}
				return c.StatusByDigest(cmd.Context(), o.digest)
			})
		},
	}
	o.conn.add(c.Flags(), false)
	c.Flags().StringVar(&o.lease, "lease", "", "lease ID")
	c.Flags().StringVar(&o.digest, "digest", "", "grant digest (sha256:...)")
	return c
}

// leaseCall runs call with the registry client and prints its lease.
func leaseCall(cmd *cobra.Command, a *app, o *leaseOpts, call func(*client.Client) (*client.Lease, error)) error {
	ifSent := ""
	if cmd.Name() != "status" {
		ifSent = "Run 'fencegate grant status --lease " + o.lease + "' (same --registry and --owner) to see the lease's state."
	}
	c, err := o.conn.client()
	if err != nil {
		return err
	}
	l, err := call(c)
	if err != nil {
		return callFailed(err, o.conn.target(), ifSent)
	}
	return printLease(cmd.OutOrStdout(), a, l, &grantOutFlags{})
}

// printLease writes the grant where asked and prints the lease: aligned
// "key: value" lines, or the lease's JSON (docs/cli.md) under -o json.
func printLease(out io.Writer, a *app, l *client.Lease, g *grantOutFlags) error {
	if g.grantOut != "" && l.Grant != "" {
		if err := os.WriteFile(g.grantOut, []byte(l.Grant+"\n"), 0o600); err != nil {
			return fmt.Errorf("--grant-out: %w (the lease IS held: release it with 'fencegate grant release --lease %s')", err, l.Lease)
		}
	}
	shown := *l
	if !g.printGrant {
		shown.Grant = ""
	}
	if a.json() {
		return printJSON(out, shown)
	}
	fw := newFieldWriter(out)
	row := fw.row
	row("resource", l.Resource)
	row("owner", l.Owner)
	row("lease", l.Lease)
	row("fenceToken", l.FenceToken)
	row("backendRevision", l.BackendRevision)
	row("policyGeneration", l.PolicyGeneration)
	row("issuerEpoch", l.IssuerEpoch)
	row("state", l.State)
	row("expiresAt", l.ExpiresAt.Format(time.RFC3339Nano))
	row("grantDigest", l.GrantDigest)
	if l.Status != "" { // lease get reads a lease without a status proof
		row("statusProof", fmt.Sprintf("%s, valid until %s", l.State, l.StatusExpiresAt.Format(time.RFC3339Nano)))
	}
	if l.Replayed {
		row("replayed", "true (an earlier acquire with this request ID)")
	}
	switch {
	case shown.Grant != "":
		row("grant", shown.Grant)
	case g.grantOut != "" && l.Grant != "":
		row("grant", "written to "+g.grantOut)
	}
	return fw.flush()
}
