package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
)

// newAdminCmd is "fencegate admin": the registry's operator routes
// (/v1/admin) other than the leases' (fencegate lease): the epoch, the
// fence floor, the policies, the meta.
func newAdminCmd(a *app) *cobra.Command {
	epoch := groupCmd("epoch", "the registry's issuer epoch: epoch bump revokes every grant issued before it", newEpochBumpCmd(a))
	floor := groupCmd("fence-floor", "the fence floors: fence-floor raise (never lowers one)", newFenceFloorRaiseCmd(a))
	return groupCmd("admin", "the registry's operator routes: admin epoch bump, admin fence-floor raise, admin policies, admin meta",
		epoch, floor, newPoliciesCmd(a), newMetaCmd(a))
}

func newMetaCmd(a *app) *cobra.Command {
	var conn connFlags
	c := &cobra.Command{
		Use:   "meta",
		Short: "the registry's global counters: issuer epoch, revision, global fence floor, policy sequence, lineage, the registry's time (admin)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := conn.client()
			if err != nil {
				return err
			}
			m, err := cl.Meta(cmd.Context())
			if err != nil {
				return callFailed(err, conn.target(), "")
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), m)
			}
			return printMeta(cmd.OutOrStdout(), m)
		},
	}
	conn.add(c.Flags(), true)
	return c
}

// printMeta prints a Meta as aligned "key: value" lines.
func printMeta(out io.Writer, m fencegate.Meta) error {
	f := newFieldWriter(out)
	f.row("issuerEpoch", m.IssuerEpoch)
	f.row("revision", m.Revision)
	f.row("fenceFloor", m.FenceFloor)
	f.row("policySeq", m.PolicySeq)
	f.row("lineage", cell(m.Lineage))
	t := "-"
	if !m.Time.IsZero() {
		t = m.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	f.row("time", t)
	return f.flush()
}

// epochBumped is the -o json answer of admin epoch bump.
type epochBumped struct {
	// Before is the issuer epoch before the bump.
	Before uint64 `json:"before"`
	// Meta is the registry's meta after it.
	Meta fencegate.Meta `json:"meta"`
}

func newEpochBumpCmd(a *app) *cobra.Command {
	var conn connFlags
	c := &cobra.Command{
		Use:   "bump",
		Short: "raise the issuer epoch by one: every grant issued before is REVOKED, every held lease ends (admin)",
		Long: `Raise the registry's issuer epoch by one (POST /v1/admin/epoch). Every grant
issued before it is revoked: its status answers REVOKED, sidecars that have
seen the new epoch refuse it (EPOCH_REVOKED), every held lease ends. To
revoke a single lease use 'fencegate lease revoke LEASE'.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := conn.client()
			if err != nil {
				return err
			}
			before, err := cl.Meta(cmd.Context())
			if err != nil {
				return callFailed(fmt.Errorf("reading the epoch before the bump: %w", err), conn.target(), "")
			}
			after, err := cl.BumpEpoch(cmd.Context())
			if err != nil {
				return callFailed(err, conn.target(), "Run 'fencegate admin meta' to see whether the issuer epoch was raised.")
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), epochBumped{Before: before.IssuerEpoch, Meta: after})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "issuer epoch raised from %d to %d: every grant issued before is revoked (lineage %s)\n",
				before.IssuerEpoch, after.IssuerEpoch, cell(after.Lineage))
			return err
		},
	}
	conn.add(c.Flags(), true)
	return c
}

// floorRaised is the -o json answer of admin fence-floor raise.
type floorRaised struct {
	// Resource is the resource whose floor was asked for ("": global).
	Resource string `json:"resource,omitempty"`
	// To is the floor asked for; Before and After the floor before and
	// after (After is max(Before, To): a floor is never lowered).
	To     uint64 `json:"to"`
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
	// Raised: the floor changed.
	Raised bool `json:"raised"`
	// Answer is the registry's answer.
	Answer fencegate.FenceFloorAnswer `json:"answer"`
}

type floorOpts struct {
	conn     connFlags
	resource string
	to       uint64
}

func newFenceFloorRaiseCmd(a *app) *cobra.Command {
	var o floorOpts
	c := &cobra.Command{
		Use:   "raise --to N [--resource R]",
		Short: "raise the global fence floor (or one resource's) to N: every later fence is above it; never lowers it (admin)",
		Long: `Raise the global fence floor, or with --resource one resource's, to at least N
(POST /v1/admin/fence-floor): every fence issued from then on is above N.
A floor is never lowered: asking for less than the floor in force changes
nothing (the registry keeps the higher one) and says so.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("to") || o.to == 0 {
				return usagef(cmd, "--to N (N > 0) is required: the floor every later fence must exceed")
			}
			return raiseFloor(cmd, a, &o)
		},
	}
	o.conn.add(c.Flags(), true)
	c.Flags().Uint64Var(&o.to, "to", 0, "the floor: every later fence is above it")
	c.Flags().StringVar(&o.resource, "resource", "", "raise this resource's floor (default: the global floor)")
	return c
}

func raiseFloor(cmd *cobra.Command, a *app, o *floorOpts) error {
	cl, err := o.conn.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	r := floorRaised{Resource: o.resource, To: o.to}
	if o.resource == "" {
		m, err := cl.Meta(ctx)
		if err != nil {
			return callFailed(fmt.Errorf("reading the floor before raising it: %w", err), o.conn.target(), "")
		}
		r.Before = m.FenceFloor
	} else {
		res, err := cl.Resource(ctx, o.resource)
		if err != nil {
			return callFailed(fmt.Errorf("reading the floor of %s before raising it: %w", o.resource, err), o.conn.target(), "")
		}
		r.Before = res.FenceFloor
	}
	if r.Answer, err = cl.FenceFloor(ctx, o.resource, o.to); err != nil {
		return callFailed(err, o.conn.target(), "Run 'fencegate admin meta' (or 'fencegate lease get --resource R') to see the floor in force.")
	}
	r.After = r.Answer.Meta.FenceFloor
	if o.resource != "" {
		r.After = r.Answer.Resource.FenceFloor
	}
	r.Raised = r.After > r.Before
	if a.json() {
		return printJSON(cmd.OutOrStdout(), r)
	}
	what := "the global fence floor"
	if o.resource != "" {
		what = "the fence floor of " + o.resource
	}
	if r.Raised {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s raised from %d to %d: every later fence is above %d\n", what, r.Before, r.After, r.After)
	} else {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s is %d already, not below %d: nothing was changed (a floor is never lowered)\n", what, r.After, o.to)
	}
	return err
}
