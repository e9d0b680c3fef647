package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
)

// newPoliciesCmd is "fencegate admin policies list|put|delete".
func newPoliciesCmd(a *app) *cobra.Command {
	return groupCmd("policies", "the registry's per-resource policies: policies list, put, delete (admin)",
		newPoliciesListCmd(a), newPoliciesPutCmd(a), newPoliciesDeleteCmd(a))
}

func newPoliciesListCmd(a *app) *cobra.Command {
	var conn connFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "every policy, deleted ones (tombstones) included",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := conn.client()
			if err != nil {
				return err
			}
			ps, err := cl.Policies(cmd.Context())
			if err != nil {
				return callFailed(err, conn.target(), "")
			}
			if ps == nil {
				ps = []fencegate.Policy{}
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), ps)
			}
			return printPolicies(cmd.OutOrStdout(), ps)
		},
	}
	conn.add(c.Flags(), true)
	return c
}

// printPolicies prints policies as aligned columns.
func printPolicies(out io.Writer, ps []fencegate.Policy) error {
	t := newTable(out, "PATTERN", "GENERATION", "ALLOWED OWNERS", "MIN TTL", "MAX TTL", "OP CLASSES", "DELETED", "UPDATED")
	for _, p := range ps {
		t.row(p.Pattern, p.Generation, strings.Join(p.AllowedOwners, ","), msDuration(p.MinTTLMs), msDuration(p.MaxTTLMs),
			strings.Join(p.OpClasses, ","), p.Deleted, unixMilli(p.UpdatedAt))
	}
	return t.flush(out, "no policies")
}

// msDuration is a TTL in milliseconds as a duration, "" for 0 (none).
func msDuration(ms uint64) string {
	if ms == 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

type policyPutOpts struct {
	conn              connFlags
	pattern           string
	owners, opClasses []string
	minTTL, maxTTL    time.Duration
}

func newPoliciesPutCmd(a *app) *cobra.Command {
	var o policyPutOpts
	c := &cobra.Command{
		Use:   "put --pattern P [--allowed-owner O]... [--min-ttl D] [--max-ttl D] [--op-class C]...",
		Short: "create or replace a policy; its new generation revokes the grants issued under the previous one",
		Long: `Create or replace the policy of a pattern (PUT /v1/admin/policies): an exact
resource ID, or a prefix ending in '*' ("invoice-batch/*"); the longest
matching pattern applies. Empty lists allow every owner and operation
class. The policy gets a new generation, which revokes the grants issued
under the previous one.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pattern == "" {
				return usagef(cmd, "--pattern is required")
			}
			if o.minTTL < 0 || o.maxTTL < 0 || (o.maxTTL > 0 && o.minTTL > o.maxTTL) {
				return usagef(cmd, "--min-ttl %s and --max-ttl %s: want 0 <= min <= max (0: no bound)", o.minTTL, o.maxTTL)
			}
			cl, err := o.conn.client()
			if err != nil {
				return err
			}
			p, err := cl.PutPolicy(cmd.Context(), fencegate.Policy{Pattern: o.pattern, AllowedOwners: o.owners, OpClasses: o.opClasses,
				MinTTLMs: uint64(o.minTTL.Milliseconds()), MaxTTLMs: uint64(o.maxTTL.Milliseconds())})
			if err != nil {
				return callFailed(err, o.conn.target(), "Run 'fencegate admin policies list' to see whether it was stored.")
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), p)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "policy %s stored at generation %d: grants issued under its previous generation are revoked\n", p.Pattern, p.Generation)
			return err
		},
	}
	o.conn.add(c.Flags(), true)
	f := c.Flags()
	f.StringVar(&o.pattern, "pattern", "", `resource ID, or prefix ending in "*"`)
	f.StringArrayVar(&o.owners, "allowed-owner", nil, `an owner allowed to acquire (exact, or a prefix ending in "*"; repeat; none: all)`)
	f.StringArrayVar(&o.opClasses, "op-class", nil, "an operation class allowed (repeat; none: all)")
	f.DurationVar(&o.minTTL, "min-ttl", 0, "the shortest TTL allowed (0: no bound)")
	f.DurationVar(&o.maxTTL, "max-ttl", 0, "the longest TTL allowed (0: no bound)")
	return c
}

func newPoliciesDeleteCmd(a *app) *cobra.Command {
	var conn connFlags
	var pattern string
	c := &cobra.Command{
		Use:   "delete --pattern P",
		Short: "delete a policy: a tombstone of a new generation replaces it and revokes the grants issued under it",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pattern == "" {
				return usagef(cmd, "--pattern is required")
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			p, err := cl.DeletePolicy(cmd.Context(), pattern)
			if err != nil {
				return callFailed(err, conn.target(), "Run 'fencegate admin policies list' to see whether it was deleted.")
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), p)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "policy %s deleted (tombstone at generation %d): grants issued under it are revoked\n", p.Pattern, p.Generation)
			return err
		},
	}
	conn.add(c.Flags(), true)
	c.Flags().StringVar(&pattern, "pattern", "", "the pattern of the policy to delete")
	return c
}
