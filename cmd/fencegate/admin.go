package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

func newReconcileCmd(_ *app) *cobra.Command {
	var o reconcileOpts
	c := &cobra.Command{
		Use:   "reconcile --resource R --op OPERATION_ID (--applied [--status N --body S] | --not-applied) --reason TEXT",
		Short: "settle a MUTATION_UNKNOWN: --applied or --not-applied (sidecar admin API)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.res == "" || o.op == "" || o.applied == o.notApplied {
				return usagef(cmd, "need --resource, --op and exactly one of --applied or --not-applied")
			}
			return runReconcile(cmd, &o)
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

func runReconcile(cmd *cobra.Command, o *reconcileOpts) error {
	err := o.admin.call(cmd.Context(), http.MethodPost, "/v1/reconcile", adminapi.ReconcileRequest{
		Resource: o.res, OperationID: o.op, Applied: o.applied, Status: o.status, Body: o.body, Reason: o.reason,
	}, cmd.OutOrStdout())
	if p := (*fencegate.Problem)(nil); errors.As(err, &p) && p.Code == fencegate.CodeMayStillApply {
		quiet, _ := p.Extra["quietAt"].(string)
		return &cliError{err: &describedError{fmt.Sprintf("NOT settled (%s): %s of %s may still take effect at the backend until %s "+
			"(its forward's deadline plus backend.maxApplyDelay), so finding it absent now does not prove it will stay absent", p.Code, o.op, o.res, quiet), err},
			hint: fmt.Sprintf("Look at the backend again after %s and run this again, or settle it --applied if it did take effect.", quiet)}
	}
	return err
}

func newResumeCmd(_ *app) *cobra.Command {
	var a adminFlags
	var res string
	c := &cobra.Command{
		Use:   "resume --resource R",
		Short: "lift a resource's pause (FENCE_REGRESSION); never lowers its highest fence",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if res == "" {
				return usagef(cmd, "--resource is required")
			}
			return a.call(cmd.Context(), http.MethodPost, "/v1/resume", map[string]string{"resource": res}, cmd.OutOrStdout())
		},
	}
	a.add(c.Flags())
	c.Flags().StringVar(&res, "resource", "", "resource ID")
	return c
}

type receiptsOpts struct {
	admin                       adminFlags
	res, op                     string
	unknown, quarantine, paused bool
}

func newReceiptsCmd(_ *app) *cobra.Command {
	var o receiptsOpts
	c := &cobra.Command{
		Use:   "receipts [--resource R [--op ID]] | --unknown | --quarantine [--resource R] | --paused",
		Short: "list receipts, unknown mutations, quarantine or paused resources (sidecar admin API)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := o.path()
			if path == "" {
				return usagef(cmd, "say what to list: --resource [--op], --unknown, --quarantine or --paused")
			}
			return o.admin.call(cmd.Context(), http.MethodGet, path, nil, cmd.OutOrStdout())
		},
	}
	o.admin.add(c.Flags())
	f := c.Flags()
	f.StringVar(&o.res, "resource", "", "resource ID")
	f.StringVar(&o.op, "op", "", "operation ID (root/seq)")
	f.BoolVar(&o.unknown, "unknown", false, "list mutations whose outcome is unknown")
	f.BoolVar(&o.quarantine, "quarantine", false, "list quarantined conflicting attempts")
	f.BoolVar(&o.paused, "paused", false, "list paused resources")
	return c
}

// path is the admin API route of what was asked ("" for nothing).
func (o *receiptsOpts) path() string {
	switch {
	case o.unknown:
		return "/v1/unknown"
	case o.paused:
		return "/v1/paused"
	case o.quarantine:
		return "/v1/quarantine?resource=" + url.QueryEscape(o.res)
	case o.res != "" && o.op != "":
		return "/v1/receipts?resource=" + url.QueryEscape(o.res) + "&op=" + url.QueryEscape(o.op)
	case o.res != "":
		return "/v1/resources/" + o.res
	}
	return ""
}
