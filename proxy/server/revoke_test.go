package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
)

// TestRevokedLeaseRefusedBySidecar: an operator revokes one lease at the
// registry (POST /v1/admin/leases/{lease}/revoke, through the Go client);
// the sidecar, checking the grant's status at the registry, refuses the
// lease's next write with GRANT_NOT_HELD and forwards nothing, while the
// resource's next lease (a higher fence) writes again.
func TestRevokedLeaseRefusedBySidecar(t *testing.T) {
	var forwarded atomic.Int64
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		forwarded.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer back.Close()
	regURL, bundle := startRegistry(t)
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: back.URL, Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regURL},
		Store:    StoreConfig{Backend: "memory"},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  t.TempDir(),
	}
	s := serveUntilDone(t, cfg)
	waitReady(t, s.AdminAddr(), true)
	ctx := context.Background()
	worker, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	operator, err := client.New(regURL) // a loopback caller: an admin of registrytest.Serve
	if err != nil {
		t.Fatal(err)
	}
	put := func(h *client.Holder, seq uint64) error {
		req, _ := http.NewRequestWithContext(client.ContextWithSegment(ctx, seq), http.MethodPut, "http://"+s.Addr()+"/v1/items/1", strings.NewReader("x"))
		req.Header.Set(identity.DefaultHeader, "worker")
		resp, err := h.Transport().Client().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return client.ResponseError(resp) // the sidecar's refusal is a response
	}
	h, err := worker.Hold(ctx, "item/1", client.WithTTL(time.Minute), client.WithoutBackground())
	if err != nil {
		t.Fatal(err)
	}
	if err := put(h, 1); err != nil || forwarded.Load() != 1 {
		t.Fatalf("a write before the revocation: %v, forwarded %d", err, forwarded.Load())
	}
	if ans, err := operator.RevokeLease(ctx, h.LeaseID(), "test"); err != nil || !ans.Revoked {
		t.Fatalf("revoke: %+v, %v", ans, err)
	}
	if err := put(h, 2); !errors.Is(err, fencegate.CodeGrantNotHeld) {
		t.Fatalf("a write of the revoked lease: %v, want GRANT_NOT_HELD", err)
	}
	if n := forwarded.Load(); n != 1 {
		t.Fatalf("the backend saw %d writes, want only the one before the revocation", n)
	}
	next, err := worker.Hold(ctx, "item/1", client.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(context.Background())
	if next.Fence() <= h.Fence() {
		t.Errorf("the next lease's fence %d is not above the revoked %d", next.Fence(), h.Fence())
	}
	if err := put(next, 1); err != nil || forwarded.Load() != 2 {
		t.Fatalf("a write of the next lease: %v, forwarded %d", err, forwarded.Load())
	}
}
