package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry"
)

// TestRenewWithoutTTLKeepsLeaseTTL: over HTTP, a renewal with no body, an
// empty body or ttlMs 0 extends the lease by its own ttlMs, not by the
// registry's default TTL; an explicit ttlMs still applies; a ttlMs too
// large for a duration is refused instead of wrapping around into the
// accepted range, and changes nothing.
func TestRenewWithoutTTLKeepsLeaseTTL(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	const ttl = 6 * registry.DefaultTTL
	resp := f.do(t, "POST", "/v1/leases", "worker-a", "application/json", `{"resource":"inv/renew","requestId":"req-1","ttlMs":60000}`)
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("acquire: %d %s", resp.StatusCode, b)
	}
	var l fencegate.Lease
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	renew := func(what, ctype, body string, want time.Duration) {
		t.Helper()
		f.clock.Advance(time.Second)
		resp := f.do(t, "POST", "/v1/leases/"+l.Lease+"/renew", "worker-a", ctype, body)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
		}
		var got fencegate.Lease
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if wantAt := f.clock.Now().Add(want).UTC(); !got.ExpiresAt.Equal(wantAt) || got.TTLMs != uint64(ttl.Milliseconds()) {
			t.Errorf("%s: expiresAt %s ttlMs %d, want %s (now + %s) and ttlMs %d", what, got.ExpiresAt, got.TTLMs, wantAt, want, ttl.Milliseconds())
		}
	}
	renew("renew without a body", "", "", ttl)
	renew("renew with {}", "application/json", `{}`, ttl)
	renew("renew with ttlMs 0", "application/json", `{"ttlMs":0}`, ttl)
	renew("renew with ttlMs 2000", "application/json", `{"ttlMs":2000}`, 2*time.Second)
	renew("renew without a TTL after an explicit one", "", "", ttl)

	// 288230376151721744 ms * 1e6 wraps to exactly 10s in an int64.
	before := meta(t, f.backend)
	for _, body := range []string{`{"ttlMs":288230376151721744}`, `{"ttlMs":-1}`} {
		resp := f.do(t, "POST", "/v1/leases/"+l.Lease+"/renew", "worker-a", "application/json", body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("renew %s: %d, want 400", body, resp.StatusCode)
		}
		if d, err := fencegate.ReadProblem(resp); err != nil || d.Code != fencegate.CodeInvalidRequest {
			t.Fatalf("renew %s: problem %+v %v", body, d, err)
		}
	}
	resp = f.do(t, "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/other","requestId":"req-2","ttlMs":288230376151721744}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("acquire with a wrapping ttlMs: %d, want 400", resp.StatusCode)
	}
	if after := meta(t, f.backend); after != before {
		t.Fatalf("refused requests changed the registry: %+v -> %+v", before, after)
	}
}
