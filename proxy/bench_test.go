package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	regmemory "github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store/bolt"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// BenchmarkSidecarLatency measures the latency a worker sees at a fixed
// request rate (open loop: requests start on a ticker whatever the earlier
// ones do), directly against the backend and through the sidecar, and
// reports p50 and p99. Each request writes a resource of its own with its
// own grant, so requests never wait for each other in the store.
//
//	go test ./proxy -run '^$' -bench SidecarLatency -benchtime 2000x
func BenchmarkSidecarLatency(b *testing.B) {
	const rate = 200 // requests per second
	for _, tc := range []struct{ name, target, status, store string }{
		{"direct", "direct", "", ""},
		{"sidecar/proof/memory", "sidecar", "proof", "memory"},
		{"sidecar/proof/bolt", "sidecar", "proof", "bolt"},
		{"sidecar/registry/bolt", "sidecar", "registry", "bolt"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			t := &testing.T{}
			f := newFixture(t)
			if tc.store == "bolt" {
				st, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				f.store = st
				f.start(nil)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			type prepared struct {
				url string
				hdr http.Header
			}
			prepare := func(i int) prepared {
				switch tc.target {
				case "direct":
					return prepared{url: f.back.srv.URL + fmt.Sprintf("/v1/docs/%d", i), hdr: http.Header{}}
				}
				h := http.Header{idHeader: {"worker-a"}}
				if tc.status == "proof" {
					tok, g := f.crafted(fmt.Sprintf("doc/%d", i), "worker-a", 1)
					h.Set("Fence-Grant", string(tok))
					h.Set("Fence-Status", f.proof(tok, g))
					return prepared{url: f.srv.URL + fmt.Sprintf("/v1/docs/%d", i), hdr: h}
				}
				res, err := f.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: fmt.Sprintf("item/%d", i), Owner: "worker-a", RequestID: fmt.Sprintf("r%d", i), TTL: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				h.Set("Fence-Grant", string(res.Grant))
				return prepared{url: f.srv.URL + fmt.Sprintf("/v1/items/%d", i), hdr: h}
			}
			// Grants are prepared ahead; proofs (5 s TTL) just before each send.
			reqs := make([]prepared, b.N)
			if tc.status != "proof" {
				for i := range reqs {
					reqs[i] = prepare(i)
				}
			}
			lat := make([]time.Duration, b.N)
			var failed int
			var mu sync.Mutex
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / rate)
			defer tick.Stop()
			b.ResetTimer()
			for i := range b.N {
				<-tick.C
				wg.Add(1)
				if tc.status == "proof" {
					reqs[i] = prepare(i)
				}
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest("PUT", reqs[i].url, strings.NewReader("payload"))
					req.Header = reqs[i].hdr
					start := time.Now()
					resp, err := client.Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					lat[i] = time.Since(start)
					if err != nil || resp.StatusCode != http.StatusCreated {
						mu.Lock()
						failed++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d of %d requests failed", failed, b.N)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// handlerBench is a sidecar built for in-process benchmarks: the handler
// (Proxy.ServeHTTP) is called directly, the memory store is used, and the
// backend is a real http.Handler reached through an in-process transport,
// so the figures are the sidecar's own cost (no loopback sockets). The
// registry (for registry-mode routes) is real and reached over loopback
// HTTP, as in production. All share one manual clock.
type handlerBench struct {
	proxy  *proxy.Proxy
	issuer *verifytest.Issuer
	reg    *registry.Registry
	clk    *clocktest.Clock
}

// inProcess is a RoundTripper that serves each request with a handler in
// the calling goroutine.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func newHandlerBench(b *testing.B, cache bool) *handlerBench {
	b.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		b.Fatal(err)
	}
	hb := &handlerBench{issuer: verifytest.NewIssuerFromKey(b, key), clk: clocktest.New(verifytest.T0.Add(time.Second))}
	signer, _ := keys.NewSigner(key)
	hb.reg, err = registry.New(registry.Options{Backend: regmemory.NewBackend(), Signer: signer, Clock: hb.clk})
	if err != nil {
		b.Fatal(err)
	}
	registrytest.Start(b, hb.reg)
	res, _ := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	jwks, _ := keys.Bundle(false, key)
	h, err := httpapi.New(httpapi.Options{Registry: hb.reg, Identity: res, JWKS: jwks})
	if err != nil {
		b.Fatal(err)
	}
	regSrv := httptest.NewServer(h)
	b.Cleanup(regSrv.Close)
	rc, _ := client.New(regSrv.URL)

	dir := b.TempDir()
	bundlePath := filepath.Join(dir, "jwks.json")
	if err := keys.Save(bundlePath, jwks); err != nil {
		b.Fatal(err)
	}
	cfg := proxy.Config{
		Backend: proxy.BackendConfig{URL: "http://backend.invalid", Timeout: time.Second},
		Routes: []proxy.RouteConfig{
			{Method: "PUT", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 5 * time.Second}},
			{Method: "POST", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
		},
		Identity:      identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:         proxy.TrustConfig{Bundle: bundlePath},
		StatusTimeout: time.Second,
	}
	back := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "stored")
	})
	if !cache {
		off := 0
		cfg.Trust.VerifyCacheEntries = &off
	}
	p, err := proxy.New(proxy.Options{Config: cfg, Store: storemem.New(storemem.Options{}), Status: rc, Clock: hb.clk, Transport: inProcess{back}})
	if err != nil {
		b.Fatal(err)
	}
	hb.proxy = p
	return hb
}

// BenchmarkHandler is the whole sidecar handler in process, over the
// memory store, for one worker sending segment after segment under one
// grant: the same grant bytes on every request, as a real worker sends
// them. In proof mode the same proof goes with every request (a worker
// reuses one for about a second); in registry mode the sidecar reads the
// status from the registry (real, over loopback HTTP) on every request.
// cache=off is the sidecar with its verification cache disabled.
//
//	go test ./proxy -run '^$' -bench Handler -benchmem -benchtime 2000x
func BenchmarkHandler(b *testing.B) {
	for _, tc := range []struct {
		status string
		cache  bool
	}{{"proof", true}, {"proof", false}, {"registry", true}, {"registry", false}} {
		name := "status=" + tc.status + "/store=memory/grant=repeated/cache=" + map[bool]string{true: "on", false: "off"}[tc.cache]
		b.Run(name, func(b *testing.B) {
			hb := newHandlerBench(b, tc.cache)
			l, err := hb.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: "doc/1", Owner: "worker-a", RequestID: "r1", TTL: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			method, hdr := "PUT", http.Header{idHeader: {"worker-a"}, "Fence-Grant": {string(l.Grant)}, "Fence-Status": {string(l.Status)}}
			if tc.status == "registry" {
				method = "POST"
				delete(hdr, "Fence-Status")
			}
			body := []byte("payload")
			b.ReportAllocs()
			b.ResetTimer()
			seq := 0
			for b.Loop() {
				seq++
				req, _ := http.NewRequest(method, "http://sidecar.test/v1/docs/1", bytes.NewReader(body))
				req.RemoteAddr = "127.0.0.1:40000"
				for k, v := range hdr {
					req.Header[k] = v
				}
				req.Header["Fence-Segment"] = []string{strconv.Itoa(seq)}
				rec := httptest.NewRecorder()
				hb.proxy.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("segment %d: %d %s", seq, rec.Code, rec.Body)
				}
			}
		})
	}
}
