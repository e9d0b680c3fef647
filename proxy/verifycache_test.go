package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// cacheFix is a real registry, sidecar and backend over loopback HTTP,
// sharing one manual clock, with one resource reachable on a proof-mode
// route (PUT /v1/docs/{id}, maxAge 2s) and a registry-mode route
// (POST /v1/docs/{id}).
type cacheFix struct {
	t          *testing.T
	metrics    *prometheus.Registry
	clk        *clocktest.Clock
	key        jwk.Key
	issuer     *verifytest.Issuer
	reg        *registry.Registry
	bundlePath string
	back       *backend
	proxy      *proxy.Proxy
	srv        *httptest.Server
	n          int
	// tamper makes the registry's status answers arrive with a broken
	// signature (a fault on the way from the real registry).
	tamper atomic.Bool
}

// tamperingSource passes status reads to the real registry client and,
// when on, flips a byte of the proof's signature on the way back.
type tamperingSource struct {
	next authn.StatusSource
	on   *atomic.Bool
}

func (s tamperingSource) StatusByDigest(ctx context.Context, digest string) (*fencegate.Lease, error) {
	l, err := s.next.StatusByDigest(ctx, digest)
	if err != nil || !s.on.Load() {
		return l, err
	}
	b := []byte(l.Status)
	i := len(b) - 3
	b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
	l.Status = string(b)
	return l, nil
}

func newCacheFix(t *testing.T, cached bool) *cacheFix {
	t.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &cacheFix{t: t, metrics: prometheus.NewRegistry(), key: key, clk: clocktest.New(time.Now()), issuer: verifytest.NewIssuerFromKey(t, key), back: newBackend(t)}
	signer, _ := keys.NewSigner(key)
	f.reg, err = registry.New(registry.Options{Backend: memory.NewBackend(), Signer: signer, Clock: f.clk, MinTTL: 10 * time.Millisecond})
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
	regSrv := httptest.NewServer(h)
	t.Cleanup(regSrv.Close)
	dir := t.TempDir()
	f.bundlePath = filepath.Join(dir, "jwks.json")
	writeBundle(t, f.bundlePath, key)
	cfg := proxy.Config{
		Backend: proxy.BackendConfig{URL: f.back.srv.URL, Timeout: time.Second},
		Routes: []proxy.RouteConfig{
			{Method: "PUT", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 2 * time.Second}},
			{Method: "POST", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
		},
		Identity:      identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:         proxy.TrustConfig{Bundle: f.bundlePath},
		StatusTimeout: time.Second,
	}
	if !cached {
		off := 0
		cfg.Trust.VerifyCacheEntries = &off // trust.verifyCacheEntries: 0
	}
	rc, _ := client.New(regSrv.URL)
	f.proxy, err = proxy.New(proxy.Options{Config: cfg, Store: storemem.New(storemem.Options{}), Status: tamperingSource{next: rc, on: &f.tamper}, Clock: f.clk, Metrics: f.metrics})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.proxy)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *cacheFix) acquire(owner, resource string) registry.Result {
	f.t.Helper()
	f.n++
	res, err := f.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: resource, Owner: owner, RequestID: "r" + strconv.Itoa(f.n), TTL: time.Minute})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// send sends a mutation and returns the HTTP status and the problem code
// ("" for an answer that is not a problem).
func (f *cacheFix) send(method, path, owner string, grant, proof []byte, seg int) (int, fencegate.Code) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader("payload "+strconv.Itoa(seg)))
	req.Header.Set(idHeader, owner)
	req.Header.Set(fencegate.HeaderGrant, string(grant))
	if proof != nil {
		req.Header.Set(fencegate.HeaderStatus, string(proof))
	}
	req.Header.Set(fencegate.HeaderSegment, strconv.Itoa(seg))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != fencegate.ProblemContentType {
		return resp.StatusCode, ""
	}
	p, err := fencegate.ReadProblem(resp)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, p.Code
}

// warm sends segment 1 of a fresh lease on doc/1 through the proof-mode
// route; it must be accepted, which puts the grant and the proof in the
// cache (when it is on).
func (f *cacheFix) warm() registry.Result {
	f.t.Helper()
	l := f.acquire("worker-a", "doc/1")
	if st, code := f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 1); st != http.StatusCreated {
		f.t.Fatalf("warm-up: %d %s", st, code)
	}
	return l
}

// claims are the grant's claims, to craft proofs for it.
func (f *cacheFix) claims(grant []byte) fencegate.Grant {
	b := verifytest.BundleOf(f.t, f.issuer)
	g, _, err := verify.ParseAndVerifyGrant(grant, b)
	if err != nil {
		f.t.Fatal(err)
	}
	return *g
}

// TestVerifyCacheSameAnswers: for every rejection the uncached path gives
// after a grant (and its proof) were accepted once, the cached path gives
// the same status and code, with the grant (and where it is the same
// bytes, the proof) answered from the cache. Each case runs on a fresh
// fixture with the cache off, then on one with it on; both see the same
// steps: the warm-up request, a change of state, the request under test.
func TestVerifyCacheSameAnswers(t *testing.T) {
	cases := []struct {
		name       string
		wantStatus int
		want       fencegate.Code
		// grantHit: with the cache on, the final request's grant is
		// answered from the cache (false where the case changes the bundle).
		grantHit bool
		run      func(f *cacheFix) (int, fencegate.Code)
	}{
		{"accepted: same grant and proof, next segment", 201, "", true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"proof expired after it was cached", 403, fencegate.CodeStatusStale, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			f.clk.Advance(6 * time.Second) // past exp (iat + 5s)
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"proof older than maxAge after it was cached", 403, fencegate.CodeStatusStale, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			f.clk.Advance(3 * time.Second) // before exp, after maxAge (2s)
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"proof from the future with a cached grant", 403, fencegate.CodeStatusStale, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			st := f.issuer.StatusFor(l.Grant, f.claims(l.Grant), f.clk.Now().Add(3*time.Second))
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, f.issuer.SignStatus(st), 2)
		}},
		{"cached grant on another resource", 403, fencegate.CodeResourceMismatch, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			return f.send("PUT", "/v1/docs/2", "worker-a", l.Grant, l.Status, 1)
		}},
		{"cached grant from another owner", 403, fencegate.CodeOwnerMismatch, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			return f.send("PUT", "/v1/docs/1", "worker-b", l.Grant, l.Status, 2)
		}},
		{"cached proof of another grant", 403, fencegate.CodeStatusStale, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			other := f.acquire("worker-a", "doc/9")
			if st, code := f.send("PUT", "/v1/docs/9", "worker-a", other.Grant, other.Status, 1); st != 201 {
				f.t.Fatalf("other grant: %d %s", st, code)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, other.Status, 2)
		}},
		{"epoch revoked, learned after the grant was cached", 403, fencegate.CodeEpochRevoked, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			if _, err := f.reg.BumpEpoch(context.Background()); err != nil {
				f.t.Fatal(err)
			}
			// Any authentic proof of the new epoch teaches the sidecar.
			newer := f.acquire("worker-a", "doc/7")
			if st, code := f.send("PUT", "/v1/docs/7", "worker-a", newer.Grant, newer.Status, 1); st != 201 {
				f.t.Fatalf("new-epoch grant: %d %s", st, code)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"policy changed after the grant was cached", 403, fencegate.CodePolicyMismatch, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			if _, err := f.reg.PutPolicy(context.Background(), fencegate.Policy{Pattern: "doc/1"}); err != nil {
				f.t.Fatal(err)
			}
			cur, err := f.reg.Status(context.Background(), registry.LeaseQuery{Lease: l.View.Lease.Lease})
			if err != nil {
				f.t.Fatal(err)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, cur.Status, 2)
		}},
		{"released, learned from the registry after the proof was cached", 403, fencegate.CodeGrantNotHeld, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			if _, err := f.reg.Release(context.Background(), "worker-a", l.View.Lease.Lease); err != nil {
				f.t.Fatal(err)
			}
			// The registry-mode route reads the status: RELEASED.
			if st, code := f.send("POST", "/v1/docs/1", "worker-a", l.Grant, nil, 2); code != fencegate.CodeGrantNotHeld {
				f.t.Fatalf("registry route after release: %d %s", st, code)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"released, the registry-mode route", 403, fencegate.CodeGrantNotHeld, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			if _, err := f.reg.Release(context.Background(), "worker-a", l.View.Lease.Lease); err != nil {
				f.t.Fatal(err)
			}
			return f.send("POST", "/v1/docs/1", "worker-a", l.Grant, nil, 2)
		}},
		{"registry answer that does not verify, with a cached grant", 503, fencegate.CodeRegistryUnavailable, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			f.tamper.Store(true)
			return f.send("POST", "/v1/docs/1", "worker-a", l.Grant, nil, 2)
		}},
		{"cached grant of a superseded owner", 409, fencegate.CodeStaleOwner, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			f.clk.Advance(time.Minute + time.Second) // the lease expires
			next := f.acquire("worker-b", "doc/1")
			if st, code := f.send("PUT", "/v1/docs/1", "worker-b", next.Grant, next.Status, 1); st != 201 {
				f.t.Fatalf("next owner: %d %s", st, code)
			}
			cur, err := f.reg.Status(context.Background(), registry.LeaseQuery{Lease: l.View.Lease.Lease})
			if err != nil {
				f.t.Fatal(err)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, cur.Status, 2)
		}},
		{"trust reload drops the key after the grant was cached", 401, fencegate.CodeGrantInvalid, false, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			writeBundle(f.t, f.bundlePath, newIssuerKey(f.t))
			if changed, err := f.proxy.ReloadTrust(true); err != nil || !changed {
				f.t.Fatalf("reload: %v %v", changed, err)
			}
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2)
		}},
		{"a cached grant with one signature byte changed", 401, fencegate.CodeGrantInvalid, false, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			bad := []byte(string(l.Grant))
			i := len(bad) - 3
			bad[i] = map[bool]byte{true: 'B', false: 'A'}[bad[i] == 'A']
			return f.send("PUT", "/v1/docs/1", "worker-a", bad, l.Status, 2)
		}},
		{"a cached grant sent with a tampered proof", 401, fencegate.CodeGrantInvalid, true, func(f *cacheFix) (int, fencegate.Code) {
			l := f.warm()
			bad := []byte(string(l.Status))
			i := len(bad) - 3
			bad[i] = map[bool]byte{true: 'B', false: 'A'}[bad[i] == 'A']
			return f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, bad, 2)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]string
			for i, cached := range []bool{false, true} {
				f := newCacheFix(t, cached)
				st, code := tc.run(f)
				got[i] = fmt.Sprintf("%d %q", st, code)
				if st != tc.wantStatus || code != tc.want {
					t.Errorf("cache %v: got %s, want %d %q", cached, got[i], tc.wantStatus, tc.want)
				}
				s := f.proxy.VerifyCacheStats()
				switch {
				case !cached && (s.Limit != 0 || s.GrantHits != 0 || s.StatusHits != 0):
					t.Errorf("cache off, but stats %+v", s)
				case cached && tc.grantHit && s.GrantHits == 0:
					t.Errorf("cache on: the final request's grant was not answered from the cache (%+v)", s)
				case cached && !tc.grantHit && s.GrantHits != 0:
					t.Errorf("cache on: a grant was answered from the cache where it must not be (%+v)", s)
				}
			}
			if got[0] != got[1] {
				t.Errorf("uncached %s, cached %s", got[0], got[1])
			}
		})
	}
}

// TestVerifyCacheConfig: trust.verifyCacheEntries sizes the cache (0 turns
// it off), and its lookups are exported as a metric with every series.
func TestVerifyCacheConfig(t *testing.T) {
	for _, cached := range []bool{true, false} {
		f := newCacheFix(t, cached)
		l := f.warm()
		if st, code := f.send("PUT", "/v1/docs/1", "worker-a", l.Grant, l.Status, 2); st != http.StatusCreated {
			t.Fatalf("segment 2 with the same grant and proof: %d %s", st, code)
		}
		st := f.proxy.VerifyCacheStats()
		if cached && (st.Limit != authn.DefaultVerifyCacheEntries || st.GrantHits == 0) {
			t.Errorf("default cache: %+v, want limit %d and grant hits", st, authn.DefaultVerifyCacheEntries)
		}
		if !cached && (st.Limit != 0 || st.GrantHits != 0 || st.Entries != 0) {
			t.Errorf("verifyCacheEntries 0: %+v, want the cache off", st)
		}
		mfs, err := f.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			found = found || mf.GetName() == "fencegate_proxy_verify_cache_lookups_total"
		}
		if !found {
			t.Error("fencegate_proxy_verify_cache_lookups_total is not exported")
		}
	}
}
