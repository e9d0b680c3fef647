package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// newLeaseCmd is "fencegate lease list|get|revoke": the registry's
// stored leases, as an operator sees them (admin routes, docs/cli.md).
func newLeaseCmd(a *app) *cobra.Command {
	return groupCmd("lease", "the registry's leases, as an operator sees them: lease list, lease get --resource, lease revoke (admin)",
		newLeaseListCmd(a), newLeaseGetCmd(a), newLeaseRevokeCmd(a))
}

// leaseStates are the values of lease list --state.
var leaseStates = []string{fencegate.StateHeld, fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked}

type leaseListOpts struct {
	conn                    connFlags
	resource, prefix, state string
	limit, pageSize         int
}

func newLeaseListCmd(a *app) *cobra.Command {
	var o leaseListOpts
	c := &cobra.Command{
		Use:   "list [--resource R | --prefix P] [--state held|expired|released|revoked] [--limit N]",
		Short: "list the stored leases, held and recently ended, in (resource, fence) order (admin)",
		Long: `List the leases the registry stores (GET /v1/admin/leases): the HELD ones and
those that ended within its retention, in (resource, fence) order, without
their grants. Every page is read unless --limit caps the count.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.resource != "" && o.prefix != "" {
				return usagef(cmd, "give at most one of --resource and --prefix")
			}
			if o.limit < 0 {
				return usagef(cmd, "--limit must be 0 (all) or more, not %d", o.limit)
			}
			if o.pageSize < 1 || o.pageSize > leaseListPage {
				return usagef(cmd, "--page-size must be in 1..%d, not %d", leaseListPage, o.pageSize)
			}
			st := strings.ToUpper(o.state)
			if st != "" && !containsString(leaseStates, st) {
				return usagef(cmd, "--state must be one of held, expired, released, revoked, not %q", o.state)
			}
			return leaseList(cmd, a, &o, st)
		},
	}
	o.conn.add(c.Flags(), true)
	f := c.Flags()
	f.StringVar(&o.resource, "resource", "", "only this resource's leases")
	f.StringVar(&o.prefix, "prefix", "", "only the leases of resources starting with this prefix")
	f.StringVar(&o.state, "state", "", "only leases in this state: held, expired, released or revoked")
	f.IntVar(&o.limit, "limit", 0, "at most this many leases (0: all, every page)")
	f.IntVar(&o.pageSize, "page-size", leaseListPage, "leases asked for per request (like kubectl's --chunk-size)")
	return c
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// leaseListPage is the page size lease list asks for by default (the
// registry's largest).
const leaseListPage = 1000

func leaseList(cmd *cobra.Command, a *app, o *leaseListOpts, state string) error {
	c, err := o.conn.client()
	if err != nil {
		return err
	}
	req := client.LeasesRequest{Resource: o.resource, Prefix: o.prefix, State: state, Limit: o.pageSize}
	leases := []fencegate.ListedLease{}
	for {
		if o.limit > 0 {
			req.Limit = min(o.pageSize, o.limit-len(leases))
		}
		page, err := c.Leases(cmd.Context(), req)
		if err != nil {
			return callFailed(err, o.conn.target(), "")
		}
		leases = append(leases, page.Leases...)
		if page.Next == "" || (o.limit > 0 && len(leases) >= o.limit) {
			break
		}
		if page.Next == req.After {
			return fmt.Errorf("%s answered a next page that is the one just read (%s): listing stopped", o.conn.target(), page.Next)
		}
		req.After = page.Next
	}
	if o.limit > 0 && len(leases) > o.limit {
		leases = leases[:o.limit]
	}
	out := cmd.OutOrStdout()
	if a.json() {
		return printJSON(out, leases)
	}
	return printLeaseTable(out, leases)
}

// printLeaseTable prints leases as aligned columns.
func printLeaseTable(out io.Writer, leases []fencegate.ListedLease) error {
	t := newTable(out, "LEASE", "RESOURCE", "FENCE", "OWNER", "STATE", "OP CLASS", "ISSUED", "EXPIRES", "ENDED")
	for _, l := range leases {
		t.row(l.Lease.Lease, l.Resource, l.FenceToken, l.Owner, l.State, l.OpClass, l.IssuedAt, l.ExpiresAt, l.EndedAt)
	}
	return t.flush(out, "no leases")
}

func newLeaseGetCmd(a *app) *cobra.Command {
	var conn connFlags
	var resource string
	c := &cobra.Command{
		Use:   "get --resource R",
		Short: "the current or last lease of a resource (who holds it, its fence, its state)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if resource == "" {
				return usagef(cmd, "--resource is required")
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			l, err := cl.LeaseOf(cmd.Context(), resource)
			if err != nil {
				return leaseOfFailed(err, resource, &conn)
			}
			return printLease(cmd.OutOrStdout(), a, l, &grantOutFlags{})
		},
	}
	conn.add(c.Flags(), false)
	c.Flags().StringVar(&resource, "resource", "", "resource ID")
	return c
}

// leaseOfFailed describes a failed LeaseOf: a resource without a stored
// lease is not found (exit 6), a malformed ID bad input (exit 2).
func leaseOfFailed(err error, resource string, conn *connFlags) error {
	if problemOf(err) == nil {
		if errors.Is(err, client.ErrNotFound) {
			return withExit(exitNotFound, fmt.Errorf("%s has no lease of %s stored: never acquired, or compacted after it ended", conn.target(), resource),
				"Check --resource; 'fencegate lease list --prefix P' lists the stored leases.")
		}
		if errors.Is(err, fencegate.ErrInvalidResource) {
			return withExit(exitUsage, fmt.Errorf("--resource %q: %w, nothing was sent", resource, err), "")
		}
	}
	return callFailed(err, conn.target(), "")
}

type leaseRevokeOpts struct {
	conn   connFlags
	reason string
}

func newLeaseRevokeCmd(a *app) *cobra.Command {
	var o leaseRevokeOpts
	c := &cobra.Command{
		Use:   "revoke LEASE [--reason TEXT]",
		Short: "revoke one lease: its grants are refused from now on, the resource is free at a higher fence (admin)",
		Long: `Revoke one lease (POST /v1/admin/leases/{lease}/revoke). Its grants' status
answers REVOKED from then on, so sidecars refuse them; its owner's renewals
fail (state REVOKED); the resource can be acquired again at once, with a
higher fence. No other lease changes (an epoch bump, 'fencegate admin epoch
bump', revokes every lease). A lease that already ended is left as it is.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usagef(cmd, "give the lease ID to revoke (fencegate lease list shows them)")
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return heldLeaseCompletions(cmd, &o.conn), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := o.conn.client()
			if err != nil {
				return err
			}
			ans, err := cl.RevokeLease(cmd.Context(), args[0], o.reason)
			if err != nil {
				return callFailed(err, o.conn.target(), "Run 'fencegate lease list --resource R' to see whether the lease is REVOKED.")
			}
			return printRevoked(cmd.OutOrStdout(), a, args[0], ans)
		},
	}
	o.conn.add(c.Flags(), true)
	c.Flags().StringVar(&o.reason, "reason", "", "why (logged by the registry, up to 1024 bytes)")
	return c
}

// printRevoked says what the revocation changed.
func printRevoked(out io.Writer, a *app, id string, ans fencegate.RevokeAnswer) error {
	if a.json() {
		return printJSON(out, ans)
	}
	l := ans.Lease
	if ans.Revoked {
		fmt.Fprintf(out, "revoked lease %s of %s (owner %s, fence %d): its grants are refused from now on; %s can be acquired again, at a higher fence\n",
			id, l.Resource, l.Owner, l.FenceToken, l.Resource)
	} else {
		fmt.Fprintf(out, "lease %s of %s had already ended (state %s): nothing was changed\n", id, l.Resource, l.State)
	}
	return nil
}

// heldLeaseCompletions are the IDs of the HELD leases at the registry of
// conn, each described by its resource and owner (shell completion of
// lease revoke); none when the registry cannot be asked.
func heldLeaseCompletions(cmd *cobra.Command, conn *connFlags) []cobra.Completion {
	cl, err := conn.client()
	if err != nil {
		return nil
	}
	page, err := cl.Leases(cmd.Context(), client.LeasesRequest{State: fencegate.StateHeld, Limit: leaseListPage})
	if err != nil {
		return nil
	}
	out := make([]cobra.Completion, 0, len(page.Leases))
	for _, l := range page.Leases {
		out = append(out, cobra.CompletionWithDesc(l.Lease.Lease, l.Resource+" ("+l.Owner+")"))
	}
	return out
}
