package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate/identity"
)

// TestRetryAfterOnRegistryClock: a LEASE_HELD answer's Retry-After is the
// holder's time left on the registry's clock (the fixture's manual clock,
// far from the process's), not on the process's clock.
func TestRetryAfterOnRegistryClock(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	resp := f.do(t, "POST", "/v1/leases", "worker-a", "application/json", `{"resource":"inv/ra","requestId":"ra-1","ttlMs":30000}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("acquire: %d", resp.StatusCode)
	}
	for _, c := range []struct {
		advance time.Duration
		want    string
	}{{0, "30"}, {20 * time.Second, "10"}, {9500 * time.Millisecond, "1"}} {
		f.clock.Advance(c.advance)
		resp := f.do(t, "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/ra","requestId":"ra-2"}`)
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("acquire of a held resource: %d", resp.StatusCode)
		}
		if got := resp.Header.Get("Retry-After"); got != c.want {
			t.Errorf("Retry-After %q at %s, want %q", got, f.clock.Now(), c.want)
		}
	}
}
