package proxy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store"
)

// TestAcceptsAndForwardsWithFenceHeaders: the happy path through the real
// registry; the backend sees the fence headers and never the grant.
func TestAcceptsAndForwardsWithFenceHeaders(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	a := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "v1",
		hdr: http.Header{"Fence-Token": {"999999"}, "Fence-Operation-Id": {"forged"}}})
	a.expect(t, http.StatusCreated, "")
	if a.header.Get(fencegate.HeaderReceipt) == "" || a.body != "stored v1" || a.header.Get("X-Backend") != "legacy" {
		t.Fatalf("answer: %+v", a)
	}
	got := f.back.last()
	root := registry.OperationRoot("item/1", l.View.Lease.Fence, l.View.Lease.GrantID)
	for h, want := range map[string]string{
		fencegate.HeaderToken: "1", fencegate.HeaderResource: "item/1", fencegate.HeaderRoot: root,
		fencegate.HeaderSegment: "1", fencegate.HeaderOperationID: root + "/1", fencegate.HeaderGrant: "", fencegate.HeaderStatus: "",
	} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("backend saw %s=%q, want %q", h, v, want)
		}
	}
	if v := got.Header.Values(fencegate.HeaderToken); len(v) != 1 {
		t.Errorf("backend saw Fence-Token %v: the client's forged value must be replaced", v)
	}
	rec, _ := f.record("item/1")
	if rec.HighestFence != 1 || rec.LastSeq != 1 || rec.InFlight != nil {
		t.Fatalf("record after commit: %+v", rec)
	}
	if n := f.counter("fencegate_proxy_mutations_total", "decision", "forwarded"); n != 1 {
		t.Fatalf("forwarded counter %v", n)
	}
}

// TestAuthenticationAndStatusCodes reaches every step 2-3 code through real
// HTTP and checks that none of them touched the store or the backend.
func TestAuthenticationAndStatusCodes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	held := f.acquire("worker-a", "item/1")
	released := f.acquire("worker-a", "item/2")
	if _, err := f.reg.Release(ctx, "worker-a", released.View.Lease.Lease); err != nil {
		t.Fatal(err)
	}
	tok, g := f.crafted("doc/1", "worker-a", 5)
	otherTok, otherG := f.crafted("doc/1", "worker-a", 6)
	expired := f.issuer.StatusFor(tok, g, time.Now().Add(-time.Hour))
	unknownTok, _ := f.crafted("item/3", "worker-a", 1) // signed with the registry's key, never issued by it

	cases := []struct {
		name   string
		c      call
		status int
		code   fencegate.Code
	}{
		{"no grant", call{path: "/v1/items/1", owner: "worker-a"}, 428, fencegate.CodeGrantRequired},
		{"garbage grant", call{path: "/v1/items/1", owner: "worker-a", grant: "not.a.jws"}, 401, fencegate.CodeGrantInvalid},
		{"tampered grant", call{path: "/v1/items/1", owner: "worker-a", grant: tamper(held.Grant)}, 401, fencegate.CodeGrantInvalid},
		{"duplicated grant", call{path: "/v1/items/1", owner: "worker-a", hdr: http.Header{fencegate.HeaderGrant: {string(held.Grant), string(held.Grant)}}}, 401, fencegate.CodeGrantInvalid},
		{"oversized grant", call{path: "/v1/items/1", owner: "worker-a", grant: strings.Repeat("a", 9000)}, 401, fencegate.CodeGrantInvalid},
		{"no identity", call{path: "/v1/items/1", grant: string(held.Grant)}, 401, fencegate.CodeIdentityRequired},
		{"wrong owner", call{path: "/v1/items/1", owner: "worker-b", grant: string(held.Grant)}, 403, fencegate.CodeOwnerMismatch},
		{"wrong resource", call{path: "/v1/items/9", owner: "worker-a", grant: string(held.Grant)}, 403, fencegate.CodeResourceMismatch},
		{"released", call{path: "/v1/items/2", owner: "worker-a", grant: string(released.Grant)}, 403, fencegate.CodeGrantNotHeld},
		{"unknown to the registry", call{path: "/v1/items/3", owner: "worker-a", grant: string(unknownTok)}, 403, fencegate.CodeGrantNotHeld},
		{"proof missing", call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok)}, 403, fencegate.CodeStatusStale},
		{"proof expired", call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: string(f.issuer.SignStatus(expired))}, 403, fencegate.CodeStatusStale},
		{"proof of another grant", call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(otherTok, otherG)}, 403, fencegate.CodeStatusStale},
		{"proof not HELD", call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: string(f.issuer.SignStatus(func() fencegate.Status {
			s := f.issuer.StatusFor(tok, g, time.Now())
			s.State = fencegate.StateReleased
			return s
		}()))}, 403, fencegate.CodeGrantNotHeld},
		{"forged proof", call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g)[:40] + "x.y.z"}, 401, fencegate.CodeGrantInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.back.count()
			f.do(tc.c).expect(t, tc.status, tc.code)
			if f.back.count() != before {
				t.Fatal("a rejected request reached the backend")
			}
			for _, r := range []string{"item/1", "item/2", "item/9", "doc/1"} {
				if rec, ok := f.record(r); ok {
					t.Fatalf("an authentication or status failure touched the store: %+v", rec)
				}
			}
		})
	}
}

func TestEpochRevoked(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	if _, err := f.reg.BumpEpoch(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, 403, fencegate.CodeEpochRevoked)
	if _, ok := f.record("item/1"); ok {
		t.Fatal("EPOCH_REVOKED touched the store")
	}
}

func TestPolicyMismatch(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	if _, err := f.reg.PutPolicy(context.Background(), fencegate.Policy{Pattern: "item/*", MaxTTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, 403, fencegate.CodePolicyMismatch)
}

func TestRegistryUnavailableFailsClosed(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	f.regSrv.Close()
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, 503, fencegate.CodeRegistryUnavailable)
	if f.back.count() != 0 {
		t.Fatal("forwarded while the registry was unreachable")
	}
}

// TestStaleOwnerStory is the stalled-worker story: A's lease lapses, B takes over
// and writes; A's late write is STALE_OWNER and B's value stays.
func TestStaleOwnerStory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, err := f.reg.Acquire(ctx, registry.AcquireRequest{Resource: "item/1", Owner: "worker-a", RequestID: "a", TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.reg.Acquire(ctx, registry.AcquireRequest{Resource: "item/1", Owner: "worker-b", RequestID: "b", TTL: 10 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.do(call{path: "/v1/items/1", owner: "worker-b", grant: string(b.Grant), body: "B"}).expect(t, 201, "")
	ans := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(a.Grant), body: "A"})
	ans.expect(t, 409, fencegate.CodeStaleOwner)
	if f.back.count() != 1 || f.back.bodies[0] != "B" {
		t.Fatalf("backend got %v", f.back.bodies)
	}
}

// TestFenceAndSegmentCodes drives the store decisions through HTTP with
// grants and proofs signed by the registry's key.
func TestFenceAndSegmentCodes(t *testing.T) {
	f := newFixture(t)
	send := func(tok []byte, g fencegate.Grant, seg, body string) answer {
		return f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: seg, body: body})
	}
	t5, g5 := f.crafted("doc/1", "worker-a", 5, func(g *fencegate.Grant) { g.IssuerEpoch, g.BackendRevision = 1, 50 })
	send(t5, g5, "2", "x").expect(t, 409, fencegate.CodeSegmentGap)
	first := send(t5, g5, "1", "one")
	first.expect(t, 201, "")
	send(t5, g5, "3", "three").expect(t, 409, fencegate.CodeSegmentGap)
	send(t5, g5, "2", "two").expect(t, 201, "")

	// Replay: the same segment and payload returns the stored answer, once forwarded.
	n := f.back.count()
	rep := send(t5, g5, "1", "one")
	rep.expect(t, 201, "")
	if rep.header.Get(fencegate.HeaderReplayed) != "true" || rep.header.Get(fencegate.HeaderReceipt) != first.header.Get(fencegate.HeaderReceipt) || rep.body != "stored one" || f.back.count() != n {
		t.Fatalf("replay: %+v (backend calls %d -> %d)", rep, n, f.back.count())
	}
	// Another payload for an accepted segment: quarantined, never forwarded.
	send(t5, g5, "1", "ONE!").expect(t, 409, fencegate.CodeSegmentConflict)
	var q []store.Quarantine
	if f.adminJSON("GET", "/v1/quarantine?resource=doc/1", "", &q); len(q) != 1 || f.back.count() != n {
		t.Fatalf("quarantine %+v, backend calls %d", q, f.back.count())
	}
	// Same fence, another root (another grant with the same fence): the
	// registry issued fence 5 twice, so the resource pauses.
	tOther, gOther := f.crafted("doc/1", "worker-a", 5)
	send(tOther, gOther, "3", "x").expect(t, 409, fencegate.CodeFenceRegression)
	send(t5, g5, "3", "three").expect(t, 409, fencegate.CodeFenceRegression)
	if code := f.adminJSON("POST", "/v1/resume", `{"resource":"doc/1"}`, nil); code != 200 {
		t.Fatalf("resume after the double issue: %d", code)
	}

	// A newer owner takes over; the old owner's unused segment 3 is stale.
	t6, g6 := f.crafted("doc/1", "worker-a", 6, func(g *fencegate.Grant) { g.IssuerEpoch, g.BackendRevision = 1, 60 })
	send(t6, g6, "1", "six").expect(t, 201, "")
	send(t5, g5, "3", "three").expect(t, 409, fencegate.CodeStaleOwner)
	// The old owner's accepted segment still replays its original receipt.
	send(t5, g5, "1", "one").expect(t, 201, "")

	// A lower fence from a later epoch: the registry went backwards.
	t3, g3 := f.crafted("doc/1", "worker-a", 3, func(g *fencegate.Grant) { g.IssuerEpoch, g.BackendRevision = 2, 5 })
	send(t3, g3, "1", "three").expect(t, 409, fencegate.CodeFenceRegression)
	// The sidecar has now seen epoch 2: grants of epoch 1 are revoked.
	send(t6, g6, "2", "six-2").expect(t, 403, fencegate.CodeEpochRevoked)
	// A new epoch-2 grant above the highest fence finds the resource paused.
	t7, g7 := f.crafted("doc/1", "worker-a", 7, func(g *fencegate.Grant) { g.IssuerEpoch, g.BackendRevision = 2, 70 })
	send(t7, g7, "1", "seven").expect(t, 409, fencegate.CodeFenceRegression)
	var paused []store.Record
	f.adminJSON("GET", "/v1/paused", "", &paused)
	if len(paused) != 1 || paused[0].HighestFence != 6 {
		t.Fatalf("paused: %+v", paused)
	}
	var rec store.Record
	if code := f.adminJSON("POST", "/v1/resume", `{"resource":"doc/1"}`, &rec); code != 200 || rec.HighestFence != 6 || rec.Pause != nil {
		t.Fatalf("resume: %d %+v", code, rec)
	}
	send(t7, g7, "1", "seven").expect(t, 201, "")
	if rec, _ := f.record("doc/1"); rec.HighestFence != 7 {
		t.Fatalf("highest after resume: %d", rec.HighestFence)
	}
}

// TestMutationUnknown: the backend hangs past the timeout after receiving
// the request; the resource blocks new fences until reconciled.
func TestMutationUnknown(t *testing.T) {
	f := newFixture(t)
	send := func(tok []byte, g fencegate.Grant, seg, body string) answer {
		return f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: seg, body: body})
	}
	t5, g5 := f.crafted("doc/1", "worker-a", 5)
	f.back.setMode("hang")
	send(t5, g5, "1", "one").expect(t, 504, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	t6, g6 := f.crafted("doc/1", "worker-b", 6)
	f.do(call{path: "/v1/docs/1", owner: "worker-b", grant: string(t6), status: f.proof(t6, g6), body: "six"}).expect(t, 409, fencegate.CodeMutationUnknown)

	var unknown []store.Mutation
	f.adminJSON("GET", "/v1/unknown", "", &unknown)
	if len(unknown) != 1 || unknown[0].Fence != 5 {
		t.Fatalf("unknown: %+v", unknown)
	}
	// The route honours Idempotency-Key: the same segment and payload is
	// forwarded again under the same key, and its answer resolves it.
	n := f.back.count()
	send(t5, g5, "1", "one").expect(t, 201, "")
	if f.back.count() != n+1 || f.back.last().Header.Get(fencegate.HeaderIdempotency) != unknown[0].OperationID {
		t.Fatalf("retry not forwarded with Idempotency-Key %s", unknown[0].OperationID)
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-b", grant: string(t6), status: f.proof(t6, g6), body: "six"}).expect(t, 201, "")
	if n := f.counter("fencegate_proxy_reconciled_total", "how", "idempotent_retry"); n != 1 {
		t.Fatalf("reconciled counter %v", n)
	}
}

// TestReconcileByOperatorAndEffectQuery resolves unknown mutations both ways.
func TestReconcileByOperatorAndEffectQuery(t *testing.T) {
	f := newFixture(t)
	t5, g5 := f.crafted("doc/1", "worker-a", 5)
	f.back.setMode("500") // an answer that proves nothing: unknown
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(t5), status: f.proof(t5, g5), body: "one"}).expect(t, 504, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	var unknown []store.Mutation
	f.adminJSON("GET", "/v1/unknown", "", &unknown)
	op := unknown[0].OperationID
	if code := f.adminJSON("POST", "/v1/reconcile", `{"resource":"doc/1","operationId":"nope/1","applied":false}`, nil); code != 404 {
		t.Fatalf("reconcile of an unknown op: %d", code)
	}
	// Not applied is accepted once the mutation is quiet (the fixture's
	// backend.maxApplyDelay is a millisecond after the forward's deadline).
	if code := f.reconcileNotApplied("doc/1", op); code != 200 {
		t.Fatalf("operator reconcile: %d", code)
	}
	t6, g6 := f.crafted("doc/1", "worker-a", 6)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(t6), status: f.proof(t6, g6), body: "six"}).expect(t, 201, "")

	// Now the effect query: the backend says fence 7's mutation was applied.
	t7, g7 := f.crafted("doc/1", "worker-a", 7)
	f.back.setMode("hang")
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(t7), status: f.proof(t7, g7), body: "seven"}).expect(t, 504, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	op7 := g7.OperationRoot + "/1"
	f.back.mu.Lock()
	f.back.effects[op7] = true
	f.back.mu.Unlock()
	f.run()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.adminJSON("GET", "/v1/unknown", "", &unknown)
		if len(unknown) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(unknown) != 0 {
		t.Fatalf("the effect query did not reconcile: %+v", unknown)
	}
	var receipts []store.Receipt
	f.adminJSON("GET", "/v1/receipts?resource=doc/1&op="+op7, "", &receipts)
	if len(receipts) != 1 || receipts[0].Source != store.SourceReconciled || string(receipts[0].Response.Body) != "effect of "+op7 {
		t.Fatalf("receipts: %+v", receipts)
	}
	// A replay of the reconciled segment returns the reconciled receipt.
	rep := f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(t7), status: f.proof(t7, g7), body: "seven"})
	if rep.header.Get(fencegate.HeaderReplayed) != "true" {
		t.Fatalf("replay after reconciliation: %+v", rep)
	}
}

func TestBackendRefusedRecordsNothing(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) { c.Backend.URL = "http://127.0.0.1:1" })
	t5, g5 := f.crafted("doc/1", "worker-a", 5)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(t5), status: f.proof(t5, g5), body: "one"}).expect(t, 502, fencegate.CodeBackendUnavailable)
	rec, _ := f.record("doc/1")
	if rec.InFlight != nil || rec.LastSeq != 0 {
		t.Fatalf("a request never sent left state behind: %+v", rec)
	}
	var unknown []store.Mutation
	if f.adminJSON("GET", "/v1/unknown", "", &unknown); len(unknown) != 0 {
		t.Fatalf("unknown after a refused connection: %+v", unknown)
	}
}

// tamper flips one bit of a character in the middle of the payload segment.
func tamper(tok []byte) string {
	b := []byte(string(tok))
	first := strings.IndexByte(string(b), '.')
	i := first + (strings.LastIndexByte(string(b), '.')-first)/2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
