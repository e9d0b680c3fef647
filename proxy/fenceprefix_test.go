package proxy_test

import (
	"net/http"
	"testing"
)

// TestClientFenceHeadersNeverReachTheBackend: the sidecar owns the Fence-*
// namespace; whatever a client sends under it is removed on reads and on
// protected writes (where only the sidecar's own Fence-* headers arrive).
func TestClientFenceHeadersNeverReachTheBackend(t *testing.T) {
	f := newFixture(t)
	forged := http.Header{"Fence-Lease": {"lease-victim"}, "Fence-Future-Field": {"x"}, "Fence-Token": {"999"}}
	f.do(call{method: "GET", path: "/v1/items/1", hdr: forged}).expect(t, 201, "")
	for _, h := range []string{"Fence-Lease", "Fence-Future-Field", "Fence-Token"} {
		if v := f.back.last().Header.Get(h); v != "" {
			t.Errorf("read: %s: %q reached the backend", h, v)
		}
	}
	a := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(a.Grant), body: "x", hdr: forged}).expect(t, 201, "")
	got := f.back.last().Header
	if got.Get("Fence-Lease") != "" || got.Get("Fence-Future-Field") != "" {
		t.Errorf("write: client Fence-* headers reached the backend: %v", got)
	}
	if got.Get("Fence-Token") == "999" || got.Get("Fence-Token") == "" {
		t.Errorf("write: Fence-Token %q, want the grant's fence", got.Get("Fence-Token"))
	}
}
