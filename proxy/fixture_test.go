package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

const idHeader = identity.DefaultHeader

// backend is the legacy service behind the sidecar: it records every
// request it receives and answers as its mode says.
type backend struct {
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  []string
	mode    string // "", "hang", "500"
	effects map[string]bool
	release chan struct{}
	srv     *httptest.Server
}

func newBackend(t *testing.T) *backend {
	b := &backend{effects: map[string]bool{}, release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if op, ok := strings.CutPrefix(r.URL.Path, "/effects/"); ok {
			b.mu.Lock()
			applied, known := b.effects[op]
			b.mu.Unlock()
			switch {
			case !known:
				w.WriteHeader(http.StatusServiceUnavailable)
			case applied:
				io.WriteString(w, "effect of "+op)
			default:
				w.WriteHeader(http.StatusNotFound)
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.reqs = append(b.reqs, r)
		b.bodies = append(b.bodies, string(body))
		mode := b.mode
		b.mu.Unlock()
		switch mode {
		case "hang":
			select {
			case <-b.release:
			case <-r.Context().Done():
			}
			return
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Backend", "legacy")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "stored "+string(body))
	}))
	t.Cleanup(func() { close(b.release); b.srv.Close() })
	return b
}

func (b *backend) setMode(m string) { b.mu.Lock(); b.mode = m; b.mu.Unlock() }
func (b *backend) count() int       { b.mu.Lock(); defer b.mu.Unlock(); return len(b.reqs) }
func (b *backend) last() *http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reqs[len(b.reqs)-1]
}

// fixture is a real registry, a real fenced store, a legacy backend and
// the sidecar in front of it, all over real HTTP on loopback.
type fixture struct {
	t       *testing.T
	issuer  *verifytest.Issuer // signs crafted grants and proofs with the registry's key
	reg     *registry.Registry
	regSrv  *httptest.Server
	back    *backend
	store   store.Store
	proxy   *proxy.Proxy
	srv     *httptest.Server
	admin   *httptest.Server
	metrics *prometheus.Registry
	cfg     proxy.Config
	dataDir string // the sidecar's dataDir (proxy.Options.LegacyLedgerDir)
	logs    *observer.ObservedLogs
	clk     clock.Clock // the sidecar's clock; nil: the real one
	// timeBound, when set before start, is the sidecar's shared lower
	// bound on the time (proxy.Options.TimeBound).
	timeBound *authn.TimeBound
}

type fixtureOpt func(*proxy.Config)

func newFixture(t *testing.T, opts ...fixtureOpt) *fixture {
	t.Helper()
	return newFixtureAt(t, nil, opts...)
}

// newFixtureAt is newFixture with the sidecar on clock clk (nil: the real
// one).
func newFixtureAt(t *testing.T, clk clock.Clock, opts ...fixtureOpt) *fixture {
	t.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, issuer: verifytest.NewIssuerFromKey(t, key), back: newBackend(t), clk: clk}
	signer, _ := keys.NewSigner(key)
	f.reg, err = registry.New(registry.Options{Backend: memory.NewBackend(), Signer: signer, MinTTL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, f.reg)
	res, _ := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	jwks, _ := keys.Bundle(false, key)
	h, err := httpapi.New(httpapi.Options{Registry: f.reg, Identity: res, JWKS: jwks, Admin: httpapi.Admin{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	f.regSrv = httptest.NewServer(h)
	t.Cleanup(f.regSrv.Close)

	dir := t.TempDir()
	bundlePath := filepath.Join(dir, "jwks.json")
	if err := keys.Save(bundlePath, jwks); err != nil {
		t.Fatal(err)
	}
	f.dataDir = dir
	f.cfg = proxy.Config{
		// The backend applies nothing after it answered or its request's
		// context ended: a millisecond bounds how late it may apply.
		Backend: proxy.BackendConfig{URL: f.back.srv.URL, Timeout: 300 * time.Millisecond, MaxApplyDelay: time.Millisecond},
		Routes: []proxy.RouteConfig{
			{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
			{Method: "PUT", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 5 * time.Second},
				IdempotencyKey: true, EffectQuery: f.back.srv.URL + "/effects/{operationId}", BodyLimit: 1024, BusyWait: 50 * time.Millisecond},
			{Method: "POST", Path: "/v1/shadow/{id}", Resource: "shadow/{id}", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
			{Method: "DELETE", Path: "/v1/off/{id}", Resource: "off/{id}", Mode: proxy.ModeOff},
		},
		Identity:      identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:         proxy.TrustConfig{Bundle: bundlePath},
		StatusTimeout: time.Second,
		Reconcile:     proxy.ReconcileConfig{Interval: 20 * time.Millisecond},
	}
	for _, o := range opts {
		o(&f.cfg)
	}
	f.start(nil)
	return f
}

// start (re)builds the sidecar over the fixture's store.
func (f *fixture) start(force []string) error {
	f.t.Helper()
	if f.store == nil {
		f.store = storemem.New(storemem.Options{})
	}
	rc, _ := client.New(f.regSrv.URL)
	f.metrics = prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	f.logs = logs
	log := zap.New(core)
	p, err := proxy.New(proxy.Options{Config: f.cfg, LegacyLedgerDir: f.dataDir, Store: f.store, Status: rc, Metrics: f.metrics, ForceDowngrade: force, Logger: log, Clock: f.clk, TimeBound: f.timeBound})
	if err != nil {
		return err
	}
	f.proxy = p
	f.srv = httptest.NewServer(p)
	admin, err := adminapi.New(adminapi.Options{Proxy: p, Gatherer: f.metrics, Logger: log})
	if err != nil {
		f.t.Fatal(err)
	}
	f.admin = httptest.NewServer(admin)
	srv, adm := f.srv, f.admin // this start's servers: a restart replaces f's
	f.t.Cleanup(func() { srv.Close(); adm.Close() })
	return nil
}

// run runs the sidecar's background loops (proxy.Proxy.Run) until the
// test ends, and waits for them then.
func (f *fixture) run() {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := f.proxy
	go func() { done <- p.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("Run: %v", err)
		}
	})
}

// acquire takes a real lease from the registry.
func (f *fixture) acquire(owner, resource string) registry.Result {
	f.t.Helper()
	res, err := f.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: resource, Owner: owner, RequestID: "r-" + strconv.FormatInt(time.Now().UnixNano(), 36), TTL: 10 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// crafted signs a grant with the registry's key (for proof-mode routes).
func (f *fixture) crafted(resource, owner string, fence uint64, mut ...func(*fencegate.Grant)) ([]byte, fencegate.Grant) {
	g := f.issuer.Grant(append([]func(*fencegate.Grant){func(g *fencegate.Grant) {
		g.Resource, g.Owner, g.FenceToken = resource, owner, fence
		g.OperationRoot = registry.OperationRoot(resource, fence, g.GrantID)
		g.IssuedAt = uint64(time.Now().UnixMilli())
	}}, mut...)...)
	return f.issuer.Sign(g), g
}

// proof is a fresh HELD lockStatus.v1 for a crafted grant.
func (f *fixture) proof(token []byte, g fencegate.Grant) string {
	st := f.issuer.StatusFor(token, g, time.Now())
	return string(f.issuer.SignStatus(st))
}

type call struct {
	method, path, owner, grant, status, seg, body string
	hdr                                           http.Header
}

type answer struct {
	code    int
	header  http.Header
	body    string
	problem *fencegate.Problem
}

func (f *fixture) do(c call) answer {
	f.t.Helper()
	if c.method == "" {
		c.method = "PUT"
	}
	req, _ := http.NewRequest(c.method, f.srv.URL+c.path, strings.NewReader(c.body))
	for k, v := range c.hdr {
		req.Header[k] = v
	}
	if c.owner != "" {
		req.Header.Set(idHeader, c.owner)
	}
	if c.grant != "" {
		req.Header.Set(fencegate.HeaderGrant, c.grant)
	}
	if c.status != "" {
		req.Header.Set(fencegate.HeaderStatus, c.status)
	}
	if c.seg != "" {
		req.Header.Set(fencegate.HeaderSegment, c.seg)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{code: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") == fencegate.ProblemContentType {
		a.problem, err = fencegate.ReadProblem(resp)
		if err != nil {
			f.t.Fatal(err)
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		a.body = string(b)
	}
	return a
}

func (a answer) expect(t *testing.T, status int, code fencegate.Code) {
	t.Helper()
	var got fencegate.Code
	if a.problem != nil {
		got = a.problem.Code
	}
	if a.code != status || got != code {
		detail := ""
		if a.problem != nil {
			detail = a.problem.Detail
		}
		t.Fatalf("got %d %q (%s), want %d %q", a.code, got, detail, status, code)
	}
}

// record reads the store's record; found=false when it has none.
func (f *fixture) record(resource string) (store.Record, bool) {
	rec, err := f.store.Record(context.Background(), resource)
	if err != nil {
		return rec, false
	}
	return rec, true
}

func (f *fixture) adminJSON(method, path, body string, out any) int {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.admin.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			f.t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// adminCall sends a request to the admin API and returns the status, the
// problem (for a problem+json answer) and the headers.
func (f *fixture) adminCall(method, path, body string) (int, *fencegate.Problem, http.Header) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.admin.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p *fencegate.Problem
	if resp.Header.Get("Content-Type") == fencegate.ProblemContentType {
		if p, err = fencegate.ReadProblem(resp); err != nil {
			f.t.Fatal(err)
		}
	}
	return resp.StatusCode, p, resp.Header
}

// reconcileNotApplied settles op of resource as not applied through the
// admin API as an operator does, asking again while the sidecar answers
// 409 MAY_STILL_APPLY (the mutation is not quiet yet); it returns the
// final status.
func (f *fixture) reconcileNotApplied(resource, op string) int {
	f.t.Helper()
	body := `{"resource":"` + resource + `","operationId":"` + op + `","applied":false,"reason":"checked the backend"}`
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, p, _ := f.adminCall("POST", "/v1/reconcile", body)
		if code != http.StatusConflict || p == nil || p.Code != fencegate.CodeMayStillApply || time.Now().After(deadline) {
			return code
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) counter(name string, labels ...string) float64 {
	f.t.Helper()
	mfs, err := f.metrics.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if m.GetCounter() != nil {
				total += m.GetCounter().GetValue()
			} else if m.GetGauge() != nil {
				total += m.GetGauge().GetValue()
			}
		}
	}
	return total
}

var _ = testutil.ToFloat64

func newIssuerKey(t *testing.T) jwk.Key {
	k, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeBundle(t *testing.T, path string, ks ...jwk.Key) {
	set, err := keys.Bundle(false, ks...)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(path, set); err != nil {
		t.Fatal(err)
	}
}
