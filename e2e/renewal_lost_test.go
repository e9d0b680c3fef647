package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// TestRenewalAnswerLost: worker A talks to the registry through a
// faultproxy that drops the answer of its renewal. The registry did renew,
// so the sidecar (registry mode: it asks the registry, not the worker)
// accepts A's write after the original TTL has passed: the lease is still
// held. Once the renewed lease lapses, A's write is GRANT_NOT_HELD; once B
// took over and wrote, it is STALE_OWNER. The backend holds exactly the
// receipts.
func TestRenewalAnswerLost(t *testing.T) {
	m := startMatrix(t, sidecarOpts{})
	fp := faultProxyTo(t, m.reg.url)
	ca := registryClient(t, fp.URL(), "worker-a")
	id := "renew"
	path := accountsPath(id)
	ctx := context.Background()

	const ttl, renewedTTL = 1500 * time.Millisecond, 4 * time.Second
	acquired := time.Now()
	a := acquireAt(t, fp.URL(), "worker-a", id, ttl, 0)
	wantAccepted(t, "A's segment 1", m.write(of("worker-a", a, path, "1", "A1")))

	fp.SetModeN(faultproxy.DropResponse, 1)
	renewSent := time.Now()
	if l, err := ca.Renew(ctx, a.Lease, renewedTTL); err == nil {
		t.Fatalf("the renewal's answer came through a proxy that drops it: %+v", l)
	}
	if fp.Stats().DroppedResponses != 1 {
		t.Fatalf("faultproxy dropped %d answers, want 1", fp.Stats().DroppedResponses)
	}

	// Past the original TTL, within the renewed one: still held.
	time.Sleep(time.Until(acquired.Add(ttl + 300*time.Millisecond)))
	if time.Since(renewSent) > renewedTTL-time.Second {
		t.Skip("too slow to write within the renewed lease; no assertion possible")
	}
	wantAccepted(t, "A's segment 2 after the original TTL (the lost renewal did extend the lease)", m.write(of("worker-a", a, path, "2", "A2")))

	// The renewed lease lapses: B's acquire waits for it.
	b := m.acquire("worker-b", id, 30*time.Second, 10*time.Second)
	wantProblem(t, "A's segment 3 after its lease lapsed", m.write(of("worker-a", a, path, "3", "A3")), fencegate.CodeGrantNotHeld)
	wantAccepted(t, "B's write", m.write(of("worker-b", b, path, "1", "B1")))
	wantProblem(t, "A's segment 3 after B wrote", m.write(of("worker-a", a, path, "3", "A3")), fencegate.CodeStaleOwner)

	m.back.wantBodies(t, path, "A1", "A2", "B1")
	checkFinalData(t, m.sc.admin, m.back, id, a.Grant, b.Grant)
}
