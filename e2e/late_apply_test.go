package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

// TestLateApplyAfterNotFound is story 1 of issue 19 with the real
// binaries: worker A's write (fence 1) is held inside the backend past the
// sidecar's backend.timeout (1 s), so A gets 504 MUTATION_UNKNOWN. The
// route's effect query answers 404 (the backend has not applied it yet),
// but the mutation is not quiet (the forward's deadline plus
// backend.maxApplyDelay, an hour here): the sidecar settles nothing, and
// B (fence 2, after A released) is refused 409 MUTATION_UNKNOWN. Then the
// backend applies A's write, late; the effect query answers 200, A is
// settled applied (a RECONCILED receipt), and B's write is accepted. The
// backend holds A1 then B1, exactly the receipts. (Before the fix the 404
// settled "not applied" at once, B was accepted, and the backend ended up
// with B1, A1: a stale write with no receipt and no UNKNOWN.)
func TestLateApplyAfterNotFound(t *testing.T) {
	m := startMatrix(t, sidecarOpts{timeout: "1s", maxApplyDelay: "1h", effectQuery: true})
	id := "late-apply"
	path := accountsPath(id)
	a := m.acquire("worker-a", id, 30*time.Second, 0)
	opA := fencegate.OperationID(root(t, a.Grant), 1)

	arrived, release := make(chan struct{}), make(chan struct{})
	m.back.setGate(func(got applied) bool {
		if got.OperationID == opA {
			close(arrived)
			<-release // the backend's own queue: the sidecar's timeout does not stop it
		}
		return true
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	answer := make(chan reply, 1)
	go func() { answer <- m.write(of("worker-a", a, path, "1", "A1")) }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("A's write never reached the backend")
	}
	wantStatusProblem(t, "A's write, held by the backend past the sidecar's timeout", <-answer, 504, fencegate.CodeMutationUnknown)

	// The effect query has answered 404 twice: the reconcile pass that got
	// the first one is over (or A was settled on it).
	unknown := func() bool {
		rec, ok := storeRecord(t, m.sc.admin, "account/"+id)
		return ok && rec.Unknown() && rec.InFlight.OperationID == opA
	}
	if !eventually(15*time.Second, func() bool { return m.back.notFoundAnswers(opA) >= 2 || !unknown() }) {
		t.Fatalf("the effect query of %s was answered 404 %d times, want 2", opA, m.back.notFoundAnswers(opA))
	}
	stillUnknown := unknown()
	if _, err := registryClient(t, m.reg.url, "worker-a").Release(context.Background(), a.Lease); err != nil {
		t.Fatal(err)
	}
	b := m.acquire("worker-b", id, 30*time.Second, 5*time.Second)
	rb := m.write(of("worker-b", b, path, "1", "B1"))
	if !stillUnknown || rb.code() != fencegate.CodeMutationUnknown {
		// Play the story to its end: the backend finishes A's write.
		close(release)
		eventually(10*time.Second, func() bool { return len(m.back.bodies(path)) >= 2 })
		t.Fatalf("A was settled as not applied on a 404 while the backend still held it (still unknown: %v); B's write: %s; the backend now holds %q: A1 applied after B1, with no receipt and no UNKNOWN",
			stillUnknown, rb, m.back.bodies(path))
	}
	wantStatusProblem(t, "B's write while A may still take effect", rb, 409, fencegate.CodeMutationUnknown)
	if got := m.back.bodies(path); len(got) != 0 {
		t.Fatalf("the backend applied %q while A was held", got)
	}

	// The backend applies A's write, after the sidecar's deadline.
	close(release)
	if !eventually(15*time.Second, func() bool {
		rec, ok := storeRecord(t, m.sc.admin, "account/"+id)
		return ok && rec.InFlight == nil
	}) {
		t.Fatal("A was not settled after the backend applied it")
	}
	rs := receiptsOf(t, m.sc.admin, "account/"+id, a.Grant)
	if len(rs) != 1 || rs[0].OperationID != opA || rs[0].Source != "RECONCILED" {
		t.Fatalf("A's receipts: %+v, want one RECONCILED receipt", rs)
	}
	wantAccepted(t, "B's write after A was settled applied", m.write(of("worker-b", b, path, "1", "B1")))
	m.back.wantBodies(t, path, "A1", "B1")
	checkFinalData(t, m.sc.admin, m.back, id, a.Grant, b.Grant)
}

// TestOperatorNotAppliedRefusedUntilQuiet: the operator's race of story 1
// with the real binaries. A's write is cut by the backend without effect
// (504 MUTATION_UNKNOWN); no effect query. "fencegate reconcile
// --not-applied" before the mutation is quiet (the forward's deadline plus
// backend.maxApplyDelay: 1 s + 5 s after A's Begin) exits 1 and says
// MAY_STILL_APPLY, that the write may still take effect and until when;
// nothing changes (B is refused MUTATION_UNKNOWN). Asked again once the
// quiet time has passed, it settles the mutation and B's write is
// accepted. The backend holds B1 only.
func TestOperatorNotAppliedRefusedUntilQuiet(t *testing.T) {
	m := startMatrix(t, sidecarOpts{timeout: "1s", maxApplyDelay: "5s"})
	id := "operator-quiet"
	path := accountsPath(id)
	a := m.acquire("worker-a", id, 30*time.Second, 0)
	opA := fencegate.OperationID(root(t, a.Grant), 1)
	m.back.setGate(func(got applied) bool { return got.OperationID != opA }) // cut, no effect
	wantStatusProblem(t, "A's write, cut by the backend", m.write(of("worker-a", a, path, "1", "A1")), 504, fencegate.CodeMutationUnknown)
	m.back.setGate(nil)

	r := run(t, "reconcile", "--admin", m.sc.admin, "--resource", "account/"+id, "--op", opA, "--not-applied", "--reason", "no row yet")
	if r.code != 1 || !strings.Contains(r.stderr, string(fencegate.CodeMayStillApply)) || !strings.Contains(r.stderr, "may still take effect") ||
		!strings.Contains(r.stderr, "until 20") {
		t.Fatalf("reconcile --not-applied before the quiet time: exit %d\n%s%s\nwant exit 1 saying MAY_STILL_APPLY, may still take effect, until when", r.code, r.stdout, r.stderr)
	}
	if rec, ok := storeRecord(t, m.sc.admin, "account/"+id); !ok || !rec.Unknown() || rec.InFlight.OperationID != opA {
		t.Fatalf("the refused reconcile changed the record: %+v", rec.InFlight)
	}
	if _, err := registryClient(t, m.reg.url, "worker-a").Release(context.Background(), a.Lease); err != nil {
		t.Fatal(err)
	}
	b := m.acquire("worker-b", id, 30*time.Second, 5*time.Second)
	wantStatusProblem(t, "B's write while A may still take effect", m.write(of("worker-b", b, path, "1", "B1")), 409, fencegate.CodeMutationUnknown)

	reconcile(t, m.sc.admin, "account/"+id, opA, false) // asks again until quiet
	wantAccepted(t, "B's write after A was settled not applied", m.write(of("worker-b", b, path, "1", "B1")))
	m.back.wantBodies(t, path, "B1")
	checkFinalData(t, m.sc.admin, m.back, id, a.Grant, b.Grant)
}
