package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
	regserver "github.com/fencegate/fencegate/registry/server"
	"github.com/fencegate/fencegate/store"
)

func newDemoCmd(_ *app) *cobra.Command {
	var o demoOpts
	c := &cobra.Command{
		Use:   "demo [--lease D] [--pause D] [--keep DIR] [--verbose]",
		Short: "play the stale-owner story with and without the sidecar (real HTTP, bbolt)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pause <= o.lease {
				return usagef(cmd, "--pause must exceed --lease, or there is no stale owner")
			}
			return runDemo(cmd.Context(), &o, cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.DurationVar(&o.lease, "lease", time.Second, "the workers' lease TTL (the story's 10 s, scaled down)")
	f.DurationVar(&o.pause, "pause", 1500*time.Millisecond, "worker-a's stall (the story's 2 minutes, scaled down); must exceed --lease")
	f.StringVar(&o.keep, "keep", "", "keep the registry and sidecar data in DIR (default: a temp dir, removed)")
	f.BoolVar(&o.verbose, "verbose", false, "print the registry's and sidecar's JSON logs to stderr")
	return c
}

// demoOpts are the flags of "fencegate demo".
type demoOpts struct {
	lease, pause time.Duration
	keep         string
	verbose      bool
}

const (
	demoResource = "invoice-batch/2026-07-19"
	demoPath     = "/v1/invoice-batches/2026-07-19"
)

type demo struct {
	clk     clock.Clock
	out     io.Writer
	start   time.Time
	lease   time.Duration
	pause   time.Duration
	reg     string
	backend *legacyBackend
	backURL string
	sidecar string
	admin   string
	http    *http.Client
}

func (d *demo) say(who, format string, a ...any) {
	fmt.Fprintf(d.out, "  [%5.2fs] %-9s %s\n", clock.Since(d.clk, d.start).Seconds(), who, fmt.Sprintf(format, a...))
}

func runDemo(ctx context.Context, o *demoOpts, out io.Writer) error {
	lease, pause, verbose := &o.lease, &o.pause, &o.verbose
	dir := o.keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "fencegate-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	log := zap.NewNop()
	if *verbose {
		var err error
		if log, _, err = newLoggers("info", logJSON); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	d := &demo{clk: clock.Real(), out: out, lease: *lease, pause: *pause, backend: newLegacyBackend(), http: &http.Client{Timeout: 10 * time.Second}}
	fmt.Fprintf(out, "fencegate demo: a stale lock holder against a legacy service, on the embedded default (bbolt)\n")
	fmt.Fprintf(out, "Time is scaled down: the story's 10 s lease is %s here, its 2-minute pause %s.\n\n", d.lease, d.pause)

	stopAll, err := d.startParts(ctx, dir, log)
	if err != nil {
		return err
	}
	defer stopAll()
	fmt.Fprintf(out, "  registry  %s  (bbolt %s)\n", d.reg, filepath.Join(dir, "registry", "registry.db"))
	fmt.Fprintf(out, "  backend   %s  legacy invoice service: last writer wins, no fencing of its own\n", d.backURL)
	fmt.Fprintf(out, "  sidecar   %s  fencegate proxy, route PUT /v1/invoice-batches/{id} enforced (admin %s)\n\n", d.sidecar, d.admin)

	fmt.Fprintln(out, "Act 1: without the sidecar (workers write to the backend directly)")
	corrupted, err := d.act(ctx, d.backURL, 1, false)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Act 2: with the sidecar (the same workers, same story, writes go through fencegate)")
	d.backend.reset()
	protected, err := d.act(ctx, d.sidecar, 2, true)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := d.receipts(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := d.decisions(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if corrupted && protected {
		fmt.Fprintln(out, "Result: without fencegate worker-a silently overwrote worker-b; with it, worker-a got STALE_OWNER and worker-b's result survived.")
		return nil
	}
	return withExit(exitFailure, fmt.Errorf("the story did not come out as expected (act 1 corrupted: %v, act 2 protected: %v)", corrupted, protected), "")
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startParts starts the registry, the backend and the sidecar in this
// process, each on its own loopback listener.
func (d *demo) startParts(ctx context.Context, dir string, log *zap.Logger) (func(), error) {
	rc := regserver.Default()
	rc.Listen = "127.0.0.1:0"
	rc.DataDir = filepath.Join(dir, "registry")
	rc.Identity = identity.Config{Mode: identity.ModeInsecureHeader}
	rc.Leases.MinTTL = 50 * time.Millisecond
	rc.Leases.DefaultTTL = d.lease
	rs, err := regserver.New(rc, log.Named("registry"))
	if err != nil {
		return nil, err
	}
	var stops []func()
	rctx, rcancel := context.WithCancel(ctx)
	rdone := make(chan struct{})
	go func() { _ = rs.Run(rctx); close(rdone) }()
	stops = append(stops, func() { rcancel(); <-rdone })
	d.reg = "http://" + rs.Addr()

	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	bsrv := &http.Server{Handler: d.backend, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = bsrv.Serve(bln) }()
	stops = append(stops, func() { bsrv.Close() })
	d.backURL = "http://" + bln.Addr().String()

	inAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pc := proxyserver.Config{
		Listen:  inAddr,
		Backend: proxy.BackendConfig{URL: d.backURL, Timeout: 5 * time.Second},
		Routes: []proxy.RouteConfig{{
			Method: "PUT", Path: "/v1/invoice-batches/{id}", Resource: "invoice-batch/{id}",
			Mode: proxy.ModeEnforce, Status: proxy.RouteStatus{Mode: proxy.StatusRegistry},
		}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: filepath.Join(rc.DataDir, "keys", "jwks.json")},
		Registry: proxyserver.RegistryConfig{URL: d.reg},
		// The demo's registry trusts the identity header: the sidecar claims
		// its service (one replica per local store) under this name.
		Store: proxyserver.StoreConfig{Backend: "bolt", Path: filepath.Join(dir, "sidecar", "store.db"),
			Service: "demo-invoice-api", ClaimIdentity: "demo-sidecar"},
		Admin: proxyserver.AdminConfig{Listen: adminAddr},
		// Probes and metrics on a port of the system's choice: the demo
		// must not depend on 8782 being free.
		Health:  proxyserver.HealthConfig{Listen: "127.0.0.1:0"},
		DataDir: filepath.Join(dir, "sidecar"),
	}
	ps, err := proxyserver.New(pc, log.Named("sidecar"), nil)
	if err != nil {
		for _, s := range stops {
			s()
		}
		return nil, err
	}
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() { _ = ps.Run(pctx); close(pdone) }()
	stops = append(stops, func() { pcancel(); <-pdone })
	d.sidecar, d.admin = "http://"+ps.Addr(), "http://"+ps.AdminAddr()
	d.start = d.clk.Now()
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}, nil
}

func (d *demo) worker(name string) (*client.Client, error) {
	return client.New(d.reg, client.WithIdentityHeader(identity.DefaultHeader, name))
}

// write PUTs a total to target, with the grant's headers when fenced.
func (d *demo) write(ctx context.Context, target, owner string, l *client.Lease, total string, fenced bool) (int, *fencegate.Problem, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, target+demoPath, strings.NewReader(total))
	req.Header.Set(identity.DefaultHeader, owner)
	req.Header.Set("Content-Type", "text/plain")
	if fenced {
		req.Header.Set(fencegate.HeaderGrant, l.Grant)
		req.Header.Set(fencegate.HeaderSegment, "1")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		pd, _ := fencegate.ReadProblem(resp)
		return resp.StatusCode, pd, "", nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil, resp.Header.Get(fencegate.HeaderReceipt), nil
}

// act plays the story once. It reports whether it came out as this act
// should: act 1 corrupted (A's stale total won), act 2 protected (B's won).
func (d *demo) act(ctx context.Context, target string, n int, fenced bool) (bool, error) {
	a, err := d.worker("worker-a")
	if err != nil {
		return false, err
	}
	b, _ := d.worker("worker-b")
	la, err := a.Acquire(ctx, client.AcquireRequest{Resource: demoResource, RequestID: fmt.Sprintf("act%d-a", n), TTL: d.lease})
	if err != nil {
		return false, fmt.Errorf("worker-a acquire: %w", err)
	}
	d.say("worker-a", "acquires %s: fence %d, lease %s, locked=true", demoResource, la.FenceToken, d.lease)
	d.say("worker-a", "computes total=1200, then stalls (a GC pause) for %s ...", d.pause)
	woke := d.clk.NewTimer(d.pause)
	defer woke.Stop()

	lb, err := b.Acquire(ctx, client.AcquireRequest{Resource: demoResource, RequestID: fmt.Sprintf("act%d-b", n), TTL: 10 * d.lease, Wait: 10 * d.lease})
	if err != nil {
		return false, fmt.Errorf("worker-b acquire: %w", err)
	}
	d.say("worker-b", "was waiting; gets the lease the moment worker-a's expires: fence %d", lb.FenceToken)
	st, pd, rc, err := d.write(ctx, target, "worker-b", lb, "total=1350", fenced)
	if err != nil {
		return false, err
	}
	d.say("worker-b", "writes total=1350 -> %s", outcome(st, pd, rc))

	<-woke.C()
	d.say("worker-a", "wakes up; locked=true is still in memory; writes its old total=1200")
	st, pd, rc, err = d.write(ctx, target, "worker-a", la, "total=1200", fenced)
	if err != nil {
		return false, err
	}
	d.say("worker-a", "-> %s", outcome(st, pd, rc))
	_, _ = b.Release(ctx, lb.Lease)

	final := d.backend.get("2026-07-19")
	if !fenced {
		ok := final == "total=1200"
		fmt.Fprintf(d.out, "  backend holds %q: worker-b's write was silently overwritten by a stale owner  %s\n", final, mark(!ok))
		return ok, nil
	}
	ok := final == "total=1350" && pd != nil && pd.Code == fencegate.CodeStaleOwner
	fmt.Fprintf(d.out, "  backend holds %q: worker-b's result survived  %s\n", final, mark(ok))
	return ok, nil
}

func mark(ok bool) string {
	if ok {
		return "[ok]"
	}
	return "[CORRUPTED]"
}

func outcome(status int, pd *fencegate.Problem, receipt string) string {
	switch {
	case pd != nil:
		return fmt.Sprintf("%d %s: %s", status, pd.Code, pd.Detail)
	case receipt != "":
		return fmt.Sprintf("%d, accepted, Fence-Receipt %s", status, receipt)
	}
	return fmt.Sprintf("%d, accepted (nothing checked it)", status)
}

// receipts prints the sidecar's record of the resource.
func (d *demo) receipts(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.admin+"/v1/resources/"+demoResource, nil)
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rec store.Record
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		return fmt.Errorf("sidecar record: %w", err)
	}
	fmt.Fprintf(d.out, "Sidecar record of %s (fencegate receipts --admin %s --resource %s):\n", demoResource, d.admin, demoResource)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  highestFence\tlastSegment\toperationRoot\taccepted at\n")
	fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\n", rec.HighestFence, rec.LastSeq, short(rec.Root), rec.AcceptedAt.Format(time.RFC3339Nano))
	tw.Flush()
	op := fencegate.OperationID(rec.Root, rec.LastSeq)
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, d.admin+"/v1/receipts?resource="+demoResource+"&op="+op, nil)
	resp2, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp2.Body.Close()
	var rcs []store.Receipt
	if err := json.NewDecoder(resp2.Body).Decode(&rcs); err != nil {
		return fmt.Errorf("sidecar receipts: %w", err)
	}
	fmt.Fprintln(d.out, "Receipts:")
	tw = tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  receipt\tfence\tseg\tbackend status\tstored response\n")
	for _, r := range rcs {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%q\n", r.ID, r.Fence, r.Seq, r.BackendStatus, strings.TrimSpace(string(r.Response.Body)))
	}
	return tw.Flush()
}

func short(s string) string {
	if len(s) > 23 {
		return s[:23] + "..."
	}
	return s
}

// decisions prints the sidecar's decision counters, as on-call engineers
// see them on /metrics.
func (d *demo) decisions(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.admin+"/metrics", nil)
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("sidecar metrics: %w", err)
	}
	fmt.Fprintf(d.out, "Sidecar decisions (fencegate_proxy_mutations_total on %s/metrics):\n", d.admin)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  route\tmode\tdecision\tcode\tcount\n")
	if mf := families["fencegate_proxy_mutations_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() == 0 {
				continue // every route x code exists at 0 from start
			}
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			code := l["code"]
			if code == "" {
				code = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.0f\n", l["route"], l["mode"], l["decision"], code, m.GetCounter().GetValue())
		}
	}
	return tw.Flush()
}
