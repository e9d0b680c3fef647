package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// TestEveryNonReadMethodCarriesTheGrant: the sidecar treats every method
// but GET, HEAD, OPTIONS and TRACE (spelled so) as a mutation, so the
// Transport sends the grant with each of them.
func TestEveryNonReadMethodCarriesTheGrant(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/methods", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	var seen http.Header
	srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "PROPPATCH", "MOVE", "MKCOL", "PURGE", "put", "get"} {
		req, _ := http.NewRequestWithContext(ctx, m, srv, nil)
		resp, err := verdict(h.Transport().RoundTrip(req))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		resp.Body.Close()
		if seen.Get(fencegate.HeaderGrant) == "" {
			t.Errorf("%s sent without Fence-Grant", m)
		}
	}
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE"} {
		req, _ := http.NewRequestWithContext(ctx, m, srv, nil)
		resp, err := verdict(h.Transport().RoundTrip(req))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		resp.Body.Close()
		if seen.Get(fencegate.HeaderGrant) != "" {
			t.Errorf("read %s sent Fence-Grant", m)
		}
	}
}
