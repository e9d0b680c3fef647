package e2e

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/faultproxy"
	"github.com/fencegate/fencegate/store"
)

// faultProxyTo starts a faultproxy in front of the server at baseURL.
func faultProxyTo(t *testing.T, baseURL string) *faultproxy.Proxy {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.Close() })
	return fp
}

// TestAckLostBetweenSidecarAndBackend: the backend applies segment 2 and
// its answer is lost on the way back to the sidecar (faultproxy drops it).
// The sidecar answers 504 MUTATION_UNKNOWN and blocks the resource (409
// MUTATION_UNKNOWN) until an operator, who finds it with "fencegate
// receipts --unknown", reconciles it as applied; then the segment's resend
// is the replay of the RECONCILED receipt and writes flow again. The
// backend holds each segment once, exactly the receipts.
func TestAckLostBetweenSidecarAndBackend(t *testing.T) {
	back := startLedgerBackend(t)
	fp := faultProxyTo(t, back.URL())
	m := startMatrixWithBackend(t, back, sidecarOpts{backendURL: fp.URL()})
	a := m.acquire("worker-a", "ack", 30*time.Second, 0)
	path := accountsPath("ack")
	w := func(seg, body string) reply { return m.write(of("worker-a", a, path, seg, body)) }

	wantAccepted(t, "segment 1", w("1", "A1"))
	fp.SetModeN(faultproxy.DropResponse, 1)
	wantStatusProblem(t, "segment 2, its answer lost", w("2", "A2"), 504, fencegate.CodeMutationUnknown)
	if fp.Stats().DroppedResponses != 1 {
		t.Fatalf("faultproxy dropped %d answers, want 1", fp.Stats().DroppedResponses)
	}
	wantStatusProblem(t, "segment 3 while segment 2 is unknown", w("3", "A3"), 409, fencegate.CodeMutationUnknown)
	b := m.acquire("worker-b", "ack-other", 30*time.Second, 0) // another resource is not blocked
	wantAccepted(t, "a write to another resource", m.write(of("worker-b", b, accountsPath("ack-other"), "1", "B1")))

	op := waitUnknown(t, m.sc.admin, "account/ack", 10*time.Second)
	if want := fencegate.OperationID(root(t, a.Grant), 2); op != want {
		t.Fatalf("the unknown mutation is %s, want segment 2's %s", op, want)
	}
	reconcile(t, m.sc.admin, "account/ack", op, true)

	if !wantAccepted(t, "segment 2 resent after reconciliation", w("2", "A2")) {
		t.Fatal("segment 2 resent was forwarded again, want the replay of its RECONCILED receipt")
	}
	wantAccepted(t, "segment 3 after reconciliation", w("3", "A3"))

	m.back.wantBodies(t, path, "A1", "A2", "A3")
	rs := checkFinalData(t, m.sc.admin, m.back, "ack", a.Grant)
	if rs[1].Source != store.SourceReconciled {
		t.Fatalf("segment 2's receipt has source %s, want %s", rs[1].Source, store.SourceReconciled)
	}
}

// TestAckLostIdempotentRetry: on a route whose backend honours
// Idempotency-Key, the worker's exact retry of the unknown segment is
// forwarded again under the same key, and its answer settles the unknown
// (design 8.3): the backend applies it once.
func TestAckLostIdempotentRetry(t *testing.T) {
	back := startLedgerBackend(t)
	fp := faultProxyTo(t, back.URL())
	m := startMatrixWithBackend(t, back, sidecarOpts{backendURL: fp.URL(), idempotencyKey: true})
	a := m.acquire("worker-a", "idem", 30*time.Second, 0)
	path := accountsPath("idem")

	fp.SetModeN(faultproxy.DropResponse, 1)
	wantStatusProblem(t, "segment 1, its answer lost", m.write(of("worker-a", a, path, "1", "A1")), 504, fencegate.CodeMutationUnknown)
	wantStatusProblem(t, "segment 1 retried with another payload", m.write(of("worker-a", a, path, "1", "A1-other")), 409, fencegate.CodeMutationUnknown)
	if wantAccepted(t, "segment 1 retried exactly", m.write(of("worker-a", a, path, "1", "A1"))) {
		t.Fatal("the idempotent retry was answered as a replay; it must be forwarded under the same key")
	}
	wantAccepted(t, "segment 2", m.write(of("worker-a", a, path, "2", "A2")))
	m.back.wantBodies(t, path, "A1", "A2")
	checkFinalData(t, m.sc.admin, m.back, "idem", a.Grant)
}

// TestAckLostBetweenWorkerAndSidecar: the sidecar accepts segment 1 and
// its answer is lost on the way to the worker (faultproxy between them
// drops it: the worker sees no answer at all). The worker retries the same
// segment: the replay of the receipt, with the stored answer and
// Fence-Replayed, applied once.
func TestAckLostBetweenWorkerAndSidecar(t *testing.T) {
	m := startMatrix(t, sidecarOpts{})
	fp := faultProxyTo(t, m.sc.url)
	a := m.acquire("worker-a", "wack", 30*time.Second, 0)
	path := accountsPath("wack")

	fp.SetModeN(faultproxy.DropResponse, 1)
	if r := send(fp.URL(), of("worker-a", a, path, "1", "A1")); r.Err == nil {
		t.Fatalf("the worker got an answer through a proxy that drops it: %s", r)
	}
	m.back.wantBodies(t, path, "A1") // the sidecar did accept and forward it
	retry := send(fp.URL(), of("worker-a", a, path, "1", "A1"))
	if !wantAccepted(t, "the worker's retry of segment 1", retry) || !strings.Contains(retry.Body, "applied A1") {
		t.Fatalf("the retry: %s, want the replay of the stored answer", retry)
	}
	wantAccepted(t, "segment 2", send(fp.URL(), of("worker-a", a, path, "2", "A2")))
	m.back.wantBodies(t, path, "A1", "A2")
	checkFinalData(t, m.sc.admin, m.back, "wack", a.Grant)
}

// root is the operation root of grant.
func root(t *testing.T, grant string) string {
	t.Helper()
	c, err := client.GrantClaims(grant)
	if err != nil {
		t.Fatal(err)
	}
	return c.OperationRoot
}
