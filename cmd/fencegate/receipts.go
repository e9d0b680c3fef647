package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

type receiptsOpts struct {
	admin                       adminFlags
	res, op                     string
	unknown, quarantine, paused bool
	record                      bool
	limit, pageSize             int
}

func newReceiptsCmd(a *app) *cobra.Command {
	var o receiptsOpts
	c := &cobra.Command{
		Use:   "receipts --resource R [--op ID] [--limit N] | --unknown | --quarantine [--resource R] | --paused",
		Short: "list a resource's receipts, unknown mutations, quarantine or paused resources (sidecar admin API)",
		Long: `List what a sidecar's store holds (sidecar admin API, docs/sidecar-admin-api.md):
  --resource R             the receipts of R, in (fence, seq) order: every page, or the first --limit N
  --resource R --op ID     the receipts of one operation (root/seq)
  --resource R --record    the store's record of R: highest fence, pause, mutation in flight
  --unknown                the mutations whose outcome is unknown (settle them with 'fencegate reconcile')
  --quarantine [--resource R]  the quarantined conflicting attempts (of R, or all)
  --paused                 the paused resources ('fencegate resume' lifts a pause)
'fencegate receipts get ID --resource R' looks up one receipt by the
Fence-Receipt id a worker got back. Tables by default; -o json prints the
store's documents (docs/cli.md).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			return listReceipts(cmd, a, &o)
		},
	}
	o.admin.add(c.Flags())
	f := c.Flags()
	f.StringVar(&o.res, "resource", "", "resource ID")
	f.StringVar(&o.op, "op", "", "operation ID (root/seq)")
	f.BoolVar(&o.unknown, "unknown", false, "list mutations whose outcome is unknown")
	f.BoolVar(&o.quarantine, "quarantine", false, "list quarantined conflicting attempts")
	f.BoolVar(&o.paused, "paused", false, "list paused resources")
	f.BoolVar(&o.record, "record", false, "with --resource: the store's record of the resource instead of its receipts")
	f.IntVar(&o.limit, "limit", 0, "with --resource: at most this many receipts (0: all, every page)")
	f.IntVar(&o.pageSize, "page-size", store.MaxReceiptsLimit, "receipts asked for per request")
	c.AddCommand(newReceiptGetCmd(a))
	return c
}

// check rejects flags that do not go together.
func (o *receiptsOpts) check(cmd *cobra.Command) error {
	switch o.listings() {
	case 0:
		return o.checkResource(cmd)
	case 1:
		return o.checkListing(cmd)
	}
	return usagef(cmd, "give one of --unknown, --quarantine or --paused")
}

// checkListing checks the flags of --unknown, --quarantine or --paused.
func (o *receiptsOpts) checkListing(cmd *cobra.Command) error {
	switch {
	case (o.unknown || o.paused) && o.res != "":
		return usagef(cmd, "--unknown and --paused list every resource: drop --resource")
	case o.op != "", o.record, o.limit != 0:
		return usagef(cmd, "--op, --record and --limit go with --resource R only")
	}
	return nil
}

// checkResource checks the flags of a listing of one resource.
func (o *receiptsOpts) checkResource(cmd *cobra.Command) error {
	switch {
	case o.res == "":
		return usagef(cmd, "say what to list: --resource R [--op ID | --record], --unknown, --quarantine or --paused")
	case o.limit < 0:
		return usagef(cmd, "--limit must be 0 (all) or more, not %d", o.limit)
	case o.pageSize < 1 || o.pageSize > store.MaxReceiptsLimit:
		return usagef(cmd, "--page-size must be in 1..%d, not %d", store.MaxReceiptsLimit, o.pageSize)
	case o.record && (o.op != "" || o.limit != 0):
		return usagef(cmd, "--record prints the record alone: drop --op and --limit")
	case o.op != "" && o.limit != 0:
		return usagef(cmd, "--limit pages a resource's receipts: drop it with --op")
	}
	return nil
}

// listings counts the listings asked for other than receipts.
func (o *receiptsOpts) listings() int {
	n := 0
	for _, b := range []bool{o.unknown, o.quarantine, o.paused} {
		if b {
			n++
		}
	}
	return n
}

// listReceipts prints what o asks for.
func listReceipts(cmd *cobra.Command, a *app, o *receiptsOpts) error {
	c, err := o.admin.client()
	if err != nil {
		return err
	}
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	switch {
	case o.unknown:
		list, err := c.Unknown(ctx)
		return printList(a, out, o.admin.failed(err), list, printUnknown)
	case o.paused:
		var list []store.Record
		err := o.admin.get(ctx, "/v1/paused", &list)
		return printList(a, out, err, list, printPaused)
	case o.quarantine:
		var list []store.Quarantine
		err := o.admin.get(ctx, "/v1/quarantine?"+url.Values{"resource": {o.res}}.Encode(), &list)
		return printList(a, out, err, list, printQuarantine)
	case o.record:
		rec, err := c.Record(ctx, o.res)
		if err != nil {
			return o.admin.failed(err)
		}
		if a.json() {
			return printJSON(out, rec)
		}
		return printRecord(out, rec)
	case o.op != "":
		list, err := c.Receipts(ctx, o.res, o.op)
		return printList(a, out, o.admin.failed(err), list, func(w io.Writer, l []store.Receipt) error {
			return printReceipts(w, l, fmt.Sprintf("no receipts of operation %s of %s", o.op, o.res))
		})
	}
	list, err := resourceReceipts(ctx, c, o.res, o.limit, o.pageSize)
	return printList(a, out, o.admin.failed(err), list, func(w io.Writer, l []store.Receipt) error {
		return printReceipts(w, l, "no receipts of "+o.res)
	})
}

// resourceReceipts reads res's receipts in pages of pageSize: every
// page, or the first limit.
func resourceReceipts(ctx context.Context, c *adminapi.Client, res string, limit, pageSize int) ([]store.Receipt, error) {
	if limit == 0 {
		return c.AllReceiptsOf(ctx, res, pageSize)
	}
	var out []store.Receipt
	var after adminapi.ReceiptCursor
	for len(out) < limit {
		n := min(limit-len(out), pageSize)
		page, err := c.ReceiptsOf(ctx, res, after, n)
		if err != nil {
			return out, err
		}
		out = append(out, page...)
		if len(page) < n {
			break
		}
		last := page[len(page)-1]
		after = adminapi.ReceiptCursor{Fence: last.Fence, Seq: last.Seq}
	}
	return out, nil
}

// printList prints list (JSON under -o json, [] when empty; else table),
// unless err.
func printList[T any](a *app, out io.Writer, err error, list []T, table func(io.Writer, []T) error) error {
	if err != nil {
		return err
	}
	if list == nil {
		list = []T{}
	}
	if a.json() {
		return printJSON(out, list)
	}
	return table(out, list)
}

// printReceipts prints receipts as aligned columns; none says so.
func printReceipts(out io.Writer, list []store.Receipt, none string) error {
	t := newTable(out, "ID", "RESOURCE", "FENCE", "SEQ", "OPERATION", "STATUS", "SOURCE", "OWNER", "ACCEPTED")
	for _, r := range list {
		t.row(r.ID, r.Resource, r.Fence, r.Seq, r.OperationID, r.BackendStatus, r.Source, r.Owner, r.AcceptedAt)
	}
	return t.flush(out, none)
}

func printUnknown(out io.Writer, list []store.Mutation) error {
	t := newTable(out, "RESOURCE", "OPERATION", "FENCE", "LEASE", "OWNER", "STATE", "ATTEMPTS", "BEGUN", "QUIET AT")
	for _, m := range list {
		t.row(m.Resource, m.OperationID, m.Fence, m.Lease, m.Owner, m.State, m.Attempts, m.BegunAt, m.QuietAt)
	}
	return t.flush(out, "no mutations of unknown outcome")
}

func printPaused(out io.Writer, list []store.Record) error {
	t := newTable(out, "RESOURCE", "HIGHEST FENCE", "REASON", "SINCE", "DETAIL")
	for _, r := range list {
		var p store.Pause
		if r.Pause != nil {
			p = *r.Pause
		}
		t.row(r.Resource, r.HighestFence, p.Reason, p.At, p.Detail)
	}
	return t.flush(out, "no paused resources")
}

func printQuarantine(out io.Writer, list []store.Quarantine) error {
	t := newTable(out, "ID", "RESOURCE", "FENCE", "OPERATION", "RECEIPT", "ATTEMPTS", "FIRST SEEN", "LAST SEEN")
	for _, q := range list {
		t.row(q.ID, q.Resource, q.Fence, q.OperationID, q.ReceiptID, q.Attempts, q.FirstSeen, q.LastSeen)
	}
	return t.flush(out, "no quarantined attempts")
}

// printRecord prints the store's record of a resource as aligned
// "key: value" lines.
func printRecord(out io.Writer, r store.Record) error {
	f := newFieldWriter(out)
	f.row("resource", r.Resource)
	f.row("highestFence", r.HighestFence)
	f.row("lastSeq", r.LastSeq)
	f.row("root", cell(r.Root))
	f.row("lease", cell(r.Lease))
	f.row("lineage", cell(r.Evidence.Lineage))
	f.row("issuerEpoch", r.Evidence.IssuerEpoch)
	f.row("acceptedAt", rfc3339(r.AcceptedAt))
	if m := r.InFlight; m != nil {
		f.row("inFlight", fmt.Sprintf("%s %s since %s", m.OperationID, m.State, rfc3339(m.BegunAt)))
	} else {
		f.row("inFlight", "-")
	}
	if p := r.Pause; p != nil {
		f.row("paused", fmt.Sprintf("%s since %s: %s", p.Reason, rfc3339(p.At), cell(p.Detail)))
	} else {
		f.row("paused", "no")
	}
	return f.flush()
}

func newReceiptGetCmd(a *app) *cobra.Command {
	var admin adminFlags
	var res string
	c := &cobra.Command{
		Use:   "get RECEIPT_ID --resource R",
		Short: "one receipt, by the Fence-Receipt id the worker got back (rcpt-...)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef(cmd, "give one receipt ID (the Fence-Receipt header's value, rcpt-...)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if res == "" {
				return usagef(cmd, "--resource is required: the resource the write was for")
			}
			c, err := admin.client()
			if err != nil {
				return err
			}
			r, err := c.Receipt(cmd.Context(), res, args[0])
			if err != nil {
				return admin.failed(err)
			}
			if a.json() {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return printReceipt(cmd.OutOrStdout(), r)
		},
	}
	admin.add(c.Flags())
	c.Flags().StringVar(&res, "resource", "", "the resource the write was for")
	return c
}

// printReceipt prints one receipt as aligned "key: value" lines.
func printReceipt(out io.Writer, r store.Receipt) error {
	f := newFieldWriter(out)
	f.row("id", r.ID)
	f.row("resource", r.Resource)
	f.row("fence", r.Fence)
	f.row("seq", r.Seq)
	f.row("operationId", r.OperationID)
	f.row("root", r.Root)
	f.row("owner", cell(r.Owner))
	f.row("backendStatus", r.BackendStatus)
	f.row("source", r.Source)
	f.row("acceptedAt", rfc3339(r.AcceptedAt))
	f.row("payloadDigest", r.PayloadDigest)
	f.row("grantDigest", r.GrantDigest)
	f.row("response", fmt.Sprintf("%d, %d bytes%s", r.Response.Status, len(r.Response.Body), truncated(r.Response.Truncated)))
	return f.flush()
}

func truncated(t bool) string {
	if t {
		return " (truncated)"
	}
	return ""
}
