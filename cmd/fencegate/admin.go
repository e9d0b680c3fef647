package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

func init() {
	register(command{name: "reconcile", summary: "settle a MUTATION_UNKNOWN: --applied or --not-applied (sidecar admin API)", run: runReconcile})
	register(command{name: "resume", summary: "lift a resource's pause (FENCE_REGRESSION); never lowers its highest fence", run: runResume})
	register(command{name: "receipts", summary: "list receipts, unknown mutations, quarantine or paused resources (sidecar admin API)", run: runReceipts})
	register(command{name: "trust", summary: "the sidecar's trusted keys: trust list | accept --kid K | reload (sidecar admin API)", run: runTrust})
}

type adminFlags struct{ url, tokenFile string }

func (a *adminFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&a.url, "admin", envOr("FENCEGATE_ADMIN", "http://127.0.0.1:8781"), "sidecar admin URL (env FENCEGATE_ADMIN)")
	fs.StringVar(&a.tokenFile, "admin-token-file", os.Getenv("FENCEGATE_ADMIN_TOKEN_FILE"), "file holding the admin bearer token")
}

func (a *adminFlags) call(ctx context.Context, method, path string, body any, out io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(a.url, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.tokenFile != "" {
		tok, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			return fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
		}
		return &exitError{1, d}
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

func runReconcile(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("reconcile", "--resource R --op OPERATION_ID (--applied [--status N --body S] | --not-applied) --reason TEXT")
	var a adminFlags
	a.add(fs)
	res := fs.String("resource", "", "resource ID")
	op := fs.String("op", "", "operation ID (root/seq) of the unknown mutation")
	applied := fs.Bool("applied", false, "the mutation took effect at the backend")
	notApplied := fs.Bool("not-applied", false, "the mutation is proven not applied")
	status := fs.Int("status", 0, "with --applied: the status replays return (default 200)")
	body := fs.String("body", "", "with --applied: the body replays return")
	reason := fs.String("reason", "", "why (logged)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *res == "" || *op == "" || *applied == *notApplied {
		return &exitError{2, errors.New("need --resource, --op and exactly one of --applied or --not-applied")}
	}
	err := a.call(ctx, http.MethodPost, "/v1/reconcile", adminapi.ReconcileRequest{
		Resource: *res, OperationID: *op, Applied: *applied, Status: *status, Body: *body, Reason: *reason,
	}, out)
	if p := (*fencegate.Problem)(nil); errors.As(err, &p) && p.Code == fencegate.CodeMayStillApply {
		quiet, _ := p.Extra["quietAt"].(string)
		return &exitError{1, fmt.Errorf("NOT settled (%s): %s of %s may still take effect at the backend until %s "+
			"(its forward's deadline plus backend.maxApplyDelay), so finding it absent now does not prove it will stay absent. "+
			"Look at the backend again after %s and run this again, or settle it --applied if it did take effect", p.Code, *op, *res, quiet, quiet)}
	}
	return err
}

func runResume(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("resume", "--resource R")
	var a adminFlags
	a.add(fs)
	res := fs.String("resource", "", "resource ID")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *res == "" {
		return &exitError{2, errors.New("--resource is required")}
	}
	return a.call(ctx, http.MethodPost, "/v1/resume", map[string]string{"resource": *res}, out)
}

func runReceipts(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("receipts", "[--resource R --op ID] | --unknown | --quarantine [--resource R] | --paused")
	var a adminFlags
	a.add(fs)
	res := fs.String("resource", "", "resource ID")
	op := fs.String("op", "", "operation ID (root/seq)")
	unknown := fs.Bool("unknown", false, "list mutations whose outcome is unknown")
	quarantine := fs.Bool("quarantine", false, "list quarantined conflicting attempts")
	paused := fs.Bool("paused", false, "list paused resources")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	switch {
	case *unknown:
		return a.call(ctx, http.MethodGet, "/v1/unknown", nil, out)
	case *paused:
		return a.call(ctx, http.MethodGet, "/v1/paused", nil, out)
	case *quarantine:
		return a.call(ctx, http.MethodGet, "/v1/quarantine?resource="+url.QueryEscape(*res), nil, out)
	case *res != "" && *op != "":
		return a.call(ctx, http.MethodGet, "/v1/receipts?resource="+url.QueryEscape(*res)+"&op="+url.QueryEscape(*op), nil, out)
	case *res != "":
		return a.call(ctx, http.MethodGet, "/v1/resources/"+*res, nil, out)
	}
	return &exitError{2, errors.New("say what to list: --resource [--op], --unknown, --quarantine or --paused")}
}

func runTrust(ctx context.Context, args []string, out io.Writer) error {
	return trustCommand(ctx, args, out)
}
