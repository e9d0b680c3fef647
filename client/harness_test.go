package client_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/faultproxy"
	"github.com/fencegate/fencegate/proxy"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
	regserver "github.com/fencegate/fencegate/registry/server"
)

// stack is a real registry, a legacy backend and a real sidecar in front of
// it, each on its own loopback listener, plus a fault-injecting proxy in
// front of the registry (the path workers use).
type stack struct {
	dir       string
	regURL    string // direct
	regFault  *faultproxy.Proxy
	sidecar   string
	sidecarFP *faultproxy.Proxy // in front of the sidecar
	backend   *backend
	stops     []func()
}

// Routes of the stack's sidecar.
const (
	// PUT /v1/batches/{id} protects resource batch/{id}, status from the registry.
	batchPath = "/v1/batches/"
	// PUT /v1/proofed/{id} protects resource proofed/{id}, status by proof.
	proofedPath = "/v1/proofed/"
)

func startStack() (*stack, error) {
	dir, err := os.MkdirTemp("", "fencegate-client-test-")
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir, backend: newBackend()}
	s.stops = append(s.stops, func() { os.RemoveAll(dir) })
	ok := false
	defer func() {
		if !ok {
			s.stop()
		}
	}()
	log := zap.NewNop()

	rc := regserver.Default()
	rc.Listen = "127.0.0.1:0"
	rc.Backend = "memory"
	rc.DataDir = filepath.Join(dir, "registry")
	rc.Identity = identity.Config{Mode: identity.ModeInsecureHeader}
	rc.Leases.MinTTL = 20 * time.Millisecond
	rc.Leases.DefaultTTL = time.Second
	rc.Leases.MaxWait = 60 * time.Second
	rs, err := regserver.New(rc, log)
	if err != nil {
		return nil, err
	}
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { _ = rs.Run(rctx); close(rdone) }()
	s.stops = append(s.stops, func() { rcancel(); <-rdone })
	s.regURL = "http://" + rs.Addr()
	if s.regFault, err = faultproxy.Start(rs.Addr()); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { s.regFault.Close() })

	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	bsrv := &http.Server{Handler: s.backend, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = bsrv.Serve(bln) }()
	s.stops = append(s.stops, func() { bsrv.Close() })

	pc := proxyserver.Config{
		Listen:  "127.0.0.1:0",
		Backend: proxy.BackendConfig{URL: "http://" + bln.Addr().String(), Timeout: 10 * time.Second},
		Routes: []proxy.RouteConfig{
			{Method: "PUT", Path: batchPath + "{id}", Resource: "batch/{id}", Mode: proxy.ModeEnforce,
				Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
			{Method: "PUT", Path: proofedPath + "{id}", Resource: "proofed/{id}", Mode: proxy.ModeEnforce,
				Status: proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 5 * time.Second}},
		},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: filepath.Join(rc.DataDir, "keys", "jwks.json")},
		Registry: proxyserver.RegistryConfig{URL: s.regURL},
		Store:    proxyserver.StoreConfig{Backend: "memory"},
		Admin:    proxyserver.AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  filepath.Join(dir, "sidecar"),
	}
	ps, err := proxyserver.New(pc, log, nil)
	if err != nil {
		return nil, err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { _ = ps.Run(pctx); close(pdone) }()
	s.stops = append(s.stops, func() { pcancel(); <-pdone })
	if s.sidecarFP, err = faultproxy.Start(ps.Addr()); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { s.sidecarFP.Close() })
	s.sidecar = s.sidecarFP.URL()
	ok = true
	return s, nil
}

func (s *stack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s, err := startStack()
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// worker is a registry client for owner, through the registry's fault proxy.
func (s *stack) worker(owner string) (*client.Client, error) {
	return client.New(s.regFault.URL(), client.WithIdentityHeader(identity.DefaultHeader, owner))
}

func (s *stack) mustWorker(t *testing.T, owner string) *client.Client {
	t.Helper()
	c, err := s.worker(owner)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// direct is a registry client that bypasses the fault proxy (the test's
// own view of the registry).
func (s *stack) direct(t *testing.T, owner string) *client.Client {
	t.Helper()
	c, err := client.New(s.regURL, client.WithIdentityHeader(identity.DefaultHeader, owner))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// put builds a PUT of body to the sidecar.
func (s *stack) put(ctx context.Context, path, body string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.sidecar+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	return req
}

// backend is the legacy service: it records every write it receives.
type backend struct {
	mu     sync.Mutex
	writes []write
	// hold, when set, is called before a write is answered (after it was
	// recorded): a slow backend.
	hold func(w write)
}

type write struct {
	Path, Body  string
	Fence       string
	Segment     string
	OperationID string
	At          time.Time
}

func newBackend() *backend { return &backend{} }

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	wr := write{Path: r.URL.Path, Body: string(body), Fence: r.Header.Get("Fence-Token"), Segment: r.Header.Get("Fence-Segment"),
		OperationID: r.Header.Get("Fence-Operation-Id"), At: time.Now()}
	b.mu.Lock()
	b.writes = append(b.writes, wr)
	hold := b.hold
	b.mu.Unlock()
	if hold != nil {
		hold(wr)
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "stored %s\n", body)
}

func (b *backend) setHold(f func(write)) {
	b.mu.Lock()
	b.hold = f
	b.mu.Unlock()
}

func (b *backend) all() []write {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]write(nil), b.writes...)
}

func (b *backend) bodies() []string {
	var out []string
	for _, w := range b.all() {
		out = append(out, w.Body)
	}
	return out
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitState waits until h reaches one of the states.
func waitState(t *testing.T, h *client.Holder, timeout time.Duration, want ...client.State) client.State {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		st, changed := h.Watch()
		for _, w := range want {
			if st == w {
				return st
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("state %s after %s, want one of %v (cause: %v)", h.State(), timeout, want, h.Err())
		case <-time.After(10 * time.Millisecond): // the local deadline moves the state only when looked at
		}
	}
}

// recorder records a Holder's transitions.
type recorder struct {
	mu  sync.Mutex
	trs []client.Transition
}

func (r *recorder) record(tr client.Transition) {
	r.mu.Lock()
	r.trs = append(r.trs, tr)
	r.mu.Unlock()
}

func (r *recorder) states() []client.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []client.State
	for _, tr := range r.trs {
		out = append(out, tr.To)
	}
	return out
}

func (r *recorder) saw(st client.State) bool {
	for _, s := range r.states() {
		if s == st {
			return true
		}
	}
	return false
}

// httptestServer serves f on a loopback listener for the test; it returns the URL.
func httptestServer(t *testing.T, f http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

// verdict is a Transport's answer with the sidecar's verdict as the error,
// as the tests read it: a refusal (client.ResponseError) comes back as the
// error with no response (its body closed).
func verdict(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	if verr := client.ResponseError(resp); verr != nil {
		resp.Body.Close()
		return nil, verr
	}
	return resp, nil
}
