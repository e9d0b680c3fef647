package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// TestMutationIsNotResentByTheTransport (issue 19, story 4): a worker
// sends its own Idempotency-Key on a route that does not declare
// idempotencyKey (its backend does not honour the key). Segment 1 leaves
// the sidecar's connection to the backend idle; segment 2 goes out on it,
// the backend applies it, and its answer is lost with the connection
// (faultproxy drops it and closes). Go's transport used to take the PUT
// for replayable (an Idempotency-Key and a rewindable body) and send it
// again on a new connection: the backend held s1, s2, s2, and the worker
// got 200 and one receipt. Now the sidecar sends it once: 504
// MUTATION_UNKNOWN, the backend holds s1, s2, and after the operator
// settles it as applied, the resend is the replay and the data ends as
// the receipts say.
func TestMutationIsNotResentByTheTransport(t *testing.T) {
	back := startLedgerBackend(t)
	back.ignoreKeys()
	fp := faultProxyTo(t, back.URL())
	m := startMatrixWithBackend(t, back, sidecarOpts{backendURL: fp.URL()})
	a := m.acquire("worker-a", "once", 30*time.Second, 0)
	path := accountsPath("once")
	w := func(seg, body, key string) reply {
		rw := of("worker-a", a, path, seg, body)
		rw.Header = http.Header{"Idempotency-Key": {key}}
		return m.write(rw)
	}

	wantAccepted(t, "segment 1", w("1", "s1", "client-key-1"))
	accepted := fp.Stats().Accepted
	fp.SetModeN(faultproxy.DropResponse, 1)
	got := w("2", "s2", "client-key-2")
	if fp.Stats().DroppedResponses != 1 {
		t.Fatalf("faultproxy dropped %d answers, want 1", fp.Stats().DroppedResponses)
	}
	if n := fp.Stats().Accepted; n != accepted {
		t.Errorf("the sidecar opened %d more connections to the backend after segment 2's answer was lost, want none (a resend)", n-accepted)
	}
	m.back.wantBodies(t, path, "s1", "s2")
	wantStatusProblem(t, "segment 2, its answer lost", got, 504, fencegate.CodeMutationUnknown)

	op := waitUnknown(t, m.sc.admin, "account/once", 10*time.Second)
	if want := fencegate.OperationID(root(t, a.Grant), 2); op != want {
		t.Fatalf("the unknown mutation is %s, want segment 2's %s", op, want)
	}
	reconcile(t, m.sc.admin, "account/once", op, true)
	if !wantAccepted(t, "segment 2 resent after reconciliation", w("2", "s2", "client-key-2")) {
		t.Fatal("segment 2 resent was forwarded again, want the replay of its RECONCILED receipt")
	}
	wantAccepted(t, "segment 3", w("3", "s3", "client-key-3"))
	m.back.wantBodies(t, path, "s1", "s2", "s3")
	checkFinalData(t, m.sc.admin, m.back, "once", a.Grant)
}
