package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

type adminFlags struct{ url, tokenFile string }

func (a *adminFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&a.url, "admin", envOr("FENCEGATE_ADMIN", "http://127.0.0.1:8781"), "sidecar admin URL (env FENCEGATE_ADMIN)")
	fs.StringVar(&a.tokenFile, "admin-token-file", os.Getenv("FENCEGATE_ADMIN_TOKEN_FILE"), "file holding the sidecar's admin bearer token (env FENCEGATE_ADMIN_TOKEN_FILE)")
}

// target names the sidecar in messages.
func (a *adminFlags) target() string { return "the sidecar at " + a.url }

// client is the admin API client of the flags.
func (a *adminFlags) client() (*adminapi.Client, error) {
	var opts []adminapi.ClientOption
	if a.tokenFile != "" {
		tok, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return nil, withExit(exitUsage, fmt.Errorf("--admin-token-file: %w", err), "")
		}
		opts = append(opts, adminapi.WithToken(strings.TrimSpace(string(tok))))
	}
	c, err := adminapi.NewClient(a.url, opts...)
	if err != nil {
		return nil, withExit(exitUsage, fmt.Errorf("--admin %q: %w", a.url, err), "")
	}
	return c, nil
}

// failed describes a failed admin API call (nil stays nil): only reads
// and settled writes use it, so a lost answer needs no recovery hint.
func (a *adminFlags) failed(err error) error { return callFailed(err, a.target(), "") }

// get GETs path of the admin API and decodes its JSON answer into v.
func (a *adminFlags) get(ctx context.Context, path string, v any) error {
	var b bytes.Buffer
	if err := a.call(ctx, http.MethodGet, path, nil, &b); err != nil {
		return err
	}
	if err := json.Unmarshal(b.Bytes(), v); err != nil {
		return fmt.Errorf("GET %s: %s answered malformed JSON: %w", path, a.target(), err)
	}
	return nil
}

func (a *adminFlags) call(ctx context.Context, method, path string, body any, out io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(a.url, "/")+path, rd)
	if err != nil {
		return withExit(exitUsage, fmt.Errorf("--admin %q: %w", a.url, err), "")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.tokenFile != "" {
		tok, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return withExit(exitUsage, fmt.Errorf("--admin-token-file: %w", err), "")
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return callFailed(err, a.target(), "")
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			return fmt.Errorf("%s %s: %s answered %d without a problem document", method, path, a.target(), resp.StatusCode)
		}
		return callFailed(d, a.target(), "")
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

type reconcileOpts struct {
	admin                 adminFlags
	res, op, body, reason string
	applied, notApplied   bool
	status                int
}

func newReconcileCmd(a *app) *cobra.Command {
	var o reconcileOpts
	c := &cobra.Command{
		Use:   "reconcile --resource R --op OPERATION_ID (--applied [--status N --body S] | --not-applied) --reason TEXT",
		Short: "settle a MUTATION_UNKNOWN: --applied or --not-applied (sidecar admin API)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.res == "" || o.op == "" || o.applied == o.notApplied {
				return usagef(cmd, "need --resource, --op and exactly one of --applied or --not-applied")
			}
			return runReconcile(cmd, a, &o)
		},
	}
	o.admin.add(c.Flags())
	f := c.Flags()
	f.StringVar(&o.res, "resource", "", "resource ID")
	f.StringVar(&o.op, "op", "", "operation ID (root/seq) of the unknown mutation")
	f.BoolVar(&o.applied, "applied", false, "the mutation took effect at the backend")
	f.BoolVar(&o.notApplied, "not-applied", false, "the mutation is proven not applied")
	f.IntVar(&o.status, "status", 0, "with --applied: the status replays return (default 200)")
	f.StringVar(&o.body, "body", "", "with --applied: the body replays return")
	f.StringVar(&o.reason, "reason", "", "why (logged)")
	return c
}

func runReconcile(cmd *cobra.Command, a *app, o *reconcileOpts) error {
	c, err := o.admin.client()
	if err != nil {
		return err
	}
	ans, err := c.Reconcile(cmd.Context(), adminapi.ReconcileRequest{
		Resource: o.res, OperationID: o.op, Applied: o.applied, Status: o.status, Body: o.body, Reason: o.reason,
	})
	if p := problemOf(err); p != nil && p.Code == fencegate.CodeMayStillApply {
		quiet, _ := p.Extra["quietAt"].(string)
		return &cliError{err: &describedError{fmt.Sprintf("NOT settled (%s): %s of %s may still take effect at the backend until %s "+
			"(its forward's deadline plus backend.maxApplyDelay), so finding it absent now does not prove it will stay absent", p.Code, o.op, o.res, quiet), err},
			hint: fmt.Sprintf("Look at the backend again after %s and run this again, or settle it --applied if it did take effect.", quiet)}
	}
	if err != nil {
		return callFailed(err, o.admin.target(), "Run 'fencegate receipts --unknown' to see whether it is still unknown.")
	}
	if a.json() {
		return printJSON(cmd.OutOrStdout(), ans)
	}
	return printReconciled(cmd.OutOrStdout(), o, ans)
}

// printReconciled says how the mutation was settled, as aligned
// "key: value" lines.
func printReconciled(out io.Writer, o *reconcileOpts, ans adminapi.ReconcileAnswer) error {
	f := newFieldWriter(out)
	f.row("resource", o.res)
	f.row("operationId", o.op)
	if ans.Applied {
		f.row("settled", "applied: replays of it return the receipt's answer")
	} else {
		f.row("settled", "not applied: the operation may be sent again")
	}
	if r := ans.Receipt; r != nil {
		f.row("receipt", r.ID)
		f.row("replayStatus", r.Response.Status)
		f.row("source", r.Source)
	}
	f.row("highestFence", ans.Record.HighestFence)
	f.row("lastSeq", ans.Record.LastSeq)
	if p := ans.Record.Pause; p != nil {
		f.row("paused", fmt.Sprintf("%s since %s", p.Reason, rfc3339(p.At)))
	} else {
		f.row("paused", "no")
	}
	return f.flush()
}

func newResumeCmd(app *app) *cobra.Command {
	var a adminFlags
	var res string
	c := &cobra.Command{
		Use:   "resume --resource R",
		Short: "lift a resource's pause (FENCE_REGRESSION, OPERATOR, STORE_LOSS); never lowers its highest fence",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if res == "" {
				return usagef(cmd, "--resource is required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			rec, err := c.Resume(cmd.Context(), res)
			if err != nil {
				return callFailed(err, a.target(), "Run 'fencegate receipts --paused' to see whether it is still paused.")
			}
			if app.json() {
				return printJSON(cmd.OutOrStdout(), rec)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "resumed %s: it accepts writes again; its highest fence %d is kept\n", rec.Resource, rec.HighestFence)
			return err
		},
	}
	a.add(c.Flags())
	c.Flags().StringVar(&res, "resource", "", "resource ID")
	return c
}
