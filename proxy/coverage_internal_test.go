package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// holeRig is a sidecar with one enforce route in proof status mode, a
// real memory store and a real HTTP backend, for tests that drive the
// pipeline's stages one by one.
type holeRig struct {
	p       *Proxy
	issuer  *verifytest.Issuer
	reached func() int
	logs    *observer.ObservedLogs
	metrics *prometheus.Registry
}

func newHoleRig(t *testing.T, tr http.RoundTripper) *holeRig {
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.Bundle(false, key)
	bundle := filepath.Join(t.TempDir(), "jwks.json")
	if err := keys.Save(bundle, jwks); err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{}, 100)
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		reached <- struct{}{}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(back.Close)
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	p, err := New(Options{
		Config: Config{
			Backend: BackendConfig{URL: back.URL, Timeout: 2 * time.Second},
			Routes: []RouteConfig{
				{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: RouteStatus{Mode: StatusProof, MaxAge: 5 * time.Second}},
				{Method: "POST", Path: "/v1/shadow/{id}", Resource: "shadow/{id}", Mode: ModeShadow, Status: RouteStatus{Mode: StatusProof, MaxAge: 5 * time.Second}},
			},
			Identity: identity.Config{Mode: identity.ModeInsecureHeader},
			Trust:    TrustConfig{Bundle: bundle},
		},
		Store:     storemem.New(storemem.Options{}),
		Transport: tr,
		Logger:    zap.New(core),
		Metrics:   reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &holeRig{p: p, issuer: verifytest.NewIssuerFromKey(t, key), reached: func() int { return len(reached) }, logs: logs, metrics: reg}
}

// write is a write of seq 1 to path (resource) under a fresh grant of
// fence with a fresh HELD proof.
func (r *holeRig) write(method, path, resource string, fence uint64) *http.Request {
	g := r.issuer.Grant(func(g *fencegate.Grant) {
		g.Resource, g.Owner, g.FenceToken = resource, "worker-a", fence
		g.OperationRoot = registry.OperationRoot(resource, fence, g.GrantID)
		g.IssuedAt = uint64(time.Now().UnixMilli())
	})
	tok := r.issuer.Sign(g)
	proof := r.issuer.SignStatus(r.issuer.StatusFor(tok, g, time.Now()))
	req := httptest.NewRequest(method, path, strings.NewReader("body"))
	req.Header.Set(identity.DefaultHeader, "worker-a")
	req.Header.Set(fencegate.HeaderGrant, string(tok))
	req.Header.Set(fencegate.HeaderStatus, string(proof))
	req.Header.Set(fencegate.HeaderSegment, "1")
	return req
}

// admitted is a write of seq 1 to item/id under a fresh grant of fence,
// taken through the real admit stage (identity, grant, binding, status,
// body).
func (r *holeRig) admitted(t *testing.T, id string, fence uint64) *attempt {
	t.Helper()
	req := r.write("PUT", "/v1/items/"+id, "item/"+id, fence)
	rt, res, err := r.p.router.match(req)
	if rt == nil || err != nil {
		t.Fatalf("route: %v %v", rt, err)
	}
	a := &attempt{rt: rt, resource: res, req: req}
	if rej := r.p.admit(a); rej != nil {
		t.Fatalf("admit: %s %s", rej.code, rej.detail)
	}
	return a
}

// answer renders a stage's outcome, as ServeHTTP does.
func (r *holeRig) answer(o outcome) {
	defer o.release()
	r.p.render(httptest.NewRecorder(), o)
}

func (r *holeRig) count(mode, auth, fence string) float64 {
	return testutil.ToFloat64(r.p.m.backendMuts.WithLabelValues(mode, auth, fence))
}

func (r *holeRig) bugs() int {
	return r.logs.FilterLevelExact(zap.ErrorLevel).FilterMessageSnippet("BUG: a mutation reached the backend").Len()
}

// TestCoverageCatchesForwardWithoutFence: a pipeline that forwards an
// authenticated write without running the fence stage (here: forward is
// called with a PROCEED the test got from the store itself, bypassing
// fence) is counted enforce/passed/skipped and logged as a bug: the count
// follows what the stages recorded, not what the store would have said.
// The same write through the real fence stage is passed/passed.
func TestCoverageCatchesForwardWithoutFence(t *testing.T) {
	r := newHoleRig(t, nil)

	a := r.admitted(t, "1", 3)
	r.answer(r.p.fence(a))
	if r.reached() != 1 || r.count("enforce", "passed", "passed") != 1 || r.bugs() != 0 {
		t.Fatalf("through the fence stage: reached %d, passed/passed %v, bugs %d",
			r.reached(), r.count("enforce", "passed", "passed"), r.bugs())
	}

	hole := r.admitted(t, "2", 3)
	g := hole.grant
	res, err := r.p.store.Begin(context.Background(), store.BeginInput{
		Resource: hole.resource, Fence: g.FenceToken, Root: g.OperationRoot, Seq: hole.seq, PayloadDigest: hole.payload,
		GrantDigest: hole.digest, Lease: g.Lease, Owner: hole.caller, Now: time.Now(), Deadline: time.Now().Add(time.Minute),
	})
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin: %+v %v", res, err)
	}
	r.answer(r.p.forward(hole, res, time.Now().Add(time.Minute)))
	if r.reached() != 2 {
		t.Fatalf("the hole did not forward: %d", r.reached())
	}
	if n := r.count("enforce", "passed", "skipped"); n != 1 {
		t.Errorf("forward without the fence stage: enforce/passed/skipped = %v, want 1", n)
	}
	if n := r.count("enforce", "passed", "passed"); n != 1 {
		t.Errorf("enforce/passed/passed = %v, want 1 (the hole must not count as covered)", n)
	}
	if c := r.p.Coverage(); c.Forwarded != 2 || c.Covered != 1 || c.Modes[CoverageEnforce].FencePassed != 1 || c.Modes[CoverageEnforce].AuthPassed != 2 {
		t.Errorf("Coverage() = %+v", c)
	}
	if r.bugs() != 1 {
		t.Errorf("%d BUG logs, want 1 for the hole", r.bugs())
	}
}

// TestCoverageCatchesUnmarkedMutation: a mutation that reaches the backend
// transport by a path that never went through the pipeline's dispatch
// carries no mark: counted unmarked/skipped/skipped and logged as a bug. A
// read by the same path (the reconciler's effect query) is not counted.
func TestCoverageCatchesUnmarkedMutation(t *testing.T) {
	r := newHoleRig(t, nil)
	for _, method := range []string{"GET", "POST"} {
		req, _ := http.NewRequest(method, r.p.backend.String()+"/v1/items/1", strings.NewReader("x"))
		resp, err := r.p.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := r.count("unmarked", "skipped", "skipped"); n != 1 {
		t.Errorf("unmarked/skipped/skipped = %v, want 1 (the POST only)", n)
	}
	if c := r.p.Coverage(); c.Forwarded != 1 || c.Covered != 0 {
		t.Errorf("Coverage() = %+v", c)
	}
	if r.bugs() != 1 {
		t.Errorf("%d BUG logs, want 1", r.bugs())
	}
}

// TestCoverageShadowAfterAbortIsNotFenced: a shadow write the store
// PROCEEDed whose dial failed is aborted (the in-flight marker withdrawn),
// then passed through as shadow mode does; the pass-through is outside the
// fence, so it counts fence=skipped. The failed dial itself is not counted:
// nothing was sent. The dialer is a real one that refuses its first dial.
func TestCoverageShadowAfterAbortIsNotFenced(t *testing.T) {
	var dials atomic.Int32
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("refused by the test's dialer")}
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	r := newHoleRig(t, tr)
	w := httptest.NewRecorder()
	r.p.ServeHTTP(w, r.write("POST", "/v1/shadow/1", "shadow/1", 4))
	if w.Code != http.StatusCreated || r.reached() != 1 || dials.Load() != 2 {
		t.Fatalf("shadow pass after a refused dial: %d, reached %d, dials %d", w.Code, r.reached(), dials.Load())
	}
	if n := r.count("shadow", "passed", "skipped"); n != 1 {
		t.Errorf("shadow/passed/skipped = %v, want 1", n)
	}
	if c := r.p.Coverage(); c.Forwarded != 1 || c.Covered != 0 {
		t.Errorf("Coverage() = %+v, want 1 forwarded, 0 covered", c)
	}
}

// BenchmarkCoverageTransport is the count's cost: a real transport to a
// real backend, bare and wrapped, for a read (not counted) and a marked
// mutation. Compare allocs/op between bare and counted.
//
//	go test ./proxy -run '^$' -bench CoverageTransport -benchmem -benchtime 2000x
func BenchmarkCoverageTransport(b *testing.B) {
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer back.Close()
	bare := &http.Transport{}
	defer bare.CloseIdleConnections()
	cov := newCoverage(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"mode", "auth", "fence"}), zap.NewNop())
	counted := &coverageTransport{next: bare, cov: cov}
	mark := &covMark{mode: covEnforce, auth: true, fence: true}
	for _, tc := range []struct {
		name   string
		method string
		tr     http.RoundTripper
	}{
		{"read/bare", "GET", bare}, {"read/counted", "GET", counted},
		{"mutation/bare", "PUT", bare}, {"mutation/counted", "PUT", counted},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req, _ := http.NewRequest(tc.method, back.URL+"/x", nil)
			if tc.method != "GET" {
				req = withMark(req, mark)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tc.tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
