package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// slowLedger is a backend that may apply a write long after its client
// gave up on the answer: a write whose operation ID is held waits inside
// the backend, whatever happens to its connection, until released, and
// is applied then. Its effect query (/effects/{operationId}) answers what
// it has applied so far: 200 with the effect, 404 for anything else; it
// has no way to know that a held write is still coming.
type slowLedger struct {
	mu       sync.Mutex
	applied  []string                 // bodies, in the order applied
	effects  map[string]bool          // operation ID -> applied
	held     map[string]chan struct{} // operation ID -> its release
	arrived  map[string]bool          // operation ID -> the write reached the backend
	notFound map[string]int           // operation ID -> effect queries answered 404
	srv      *httptest.Server
}

func newSlowLedger(t *testing.T) *slowLedger {
	b := &slowLedger{effects: map[string]bool{}, held: map[string]chan struct{}{}, arrived: map[string]bool{}, notFound: map[string]int{}}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close) // after the releases below: Close waits for held handlers
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for op, ch := range b.held {
			close(ch)
			delete(b.held, op)
		}
	})
	return b
}

func (b *slowLedger) serve(w http.ResponseWriter, r *http.Request) {
	if op, ok := strings.CutPrefix(r.URL.Path, "/effects/"); ok {
		b.mu.Lock()
		applied := b.effects[op]
		if !applied {
			b.notFound[op]++
		}
		b.mu.Unlock()
		if !applied {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "effect of "+op)
		return
	}
	body, _ := io.ReadAll(r.Body)
	op := r.Header.Get(fencegate.HeaderOperationID)
	b.mu.Lock()
	b.arrived[op] = true
	hold := b.held[op]
	b.mu.Unlock()
	if hold != nil {
		<-hold // the backend's own queue: the client's timeout does not stop it
	}
	b.mu.Lock()
	b.applied = append(b.applied, string(body))
	b.effects[op] = true
	b.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, "stored "+string(body))
}

// hold makes the write of op wait inside the backend until release.
func (b *slowLedger) hold(op string) {
	b.mu.Lock()
	b.held[op] = make(chan struct{})
	b.mu.Unlock()
}

// release lets the held write of op be applied.
func (b *slowLedger) release(op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.held[op]; ok {
		close(ch)
		delete(b.held, op)
	}
}

func (b *slowLedger) state(op string) (applied []string, arrived bool, notFound int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.applied...), b.arrived[op], b.notFound[op]
}

// TestSlowBackendAppliesAfterNotFound is story 1 of issue 19. Worker A's
// write (fence 5) times out at the sidecar while the backend still holds
// it: MUTATION_UNKNOWN. The reconciler's effect query answers 404: the
// write is not applied YET. Settling "not applied" on that would let B
// (fence 6) in, and then the backend would finish A's write: it would hold
// B, A-slow, a stale write with no receipt and no UNKNOWN. Instead the 404
// settles nothing before the mutation's quiet time (the forward's deadline
// plus backend.maxApplyDelay, an hour here): the mutation stays unknown
// (logged, fencegate_proxy_unknown_not_quiet) and B is refused
// MUTATION_UNKNOWN. When the backend applies A, the effect query says 200,
// A is settled applied with its receipt, and B proceeds: the backend holds
// A-slow, then B.
func TestSlowBackendAppliesAfterNotFound(t *testing.T) {
	slow := newSlowLedger(t)
	f := newFixture(t, func(c *proxy.Config) {
		c.Backend.URL = slow.srv.URL
		c.Backend.MaxApplyDelay = time.Hour
		c.Routes[1].EffectQuery = slow.srv.URL + "/effects/{operationId}"
	})
	send := func(tok []byte, g fencegate.Grant, body string) answer {
		return f.do(call{path: "/v1/docs/1", owner: g.Owner, grant: string(tok), status: f.proof(tok, g), seg: "1", body: body})
	}
	tokA, gA := f.crafted("doc/1", "worker-a", 5)
	opA := gA.OperationRoot + "/1"
	slow.hold(opA)
	send(tokA, gA, "A-slow").expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	if _, arrived, _ := slow.state(opA); !arrived {
		t.Fatal("A's write never reached the backend")
	}

	f.run()
	// Two 404s: the reconcile pass that got the first one is over.
	rcWait(t, "two effect queries of A answered 404, or A settled", func() bool {
		_, _, n := slow.state(opA)
		return n >= 2 || len(rcUnknownOps(f)) == 0
	})
	tokB, gB := f.crafted("doc/1", "worker-b", 6)
	if ops := rcUnknownOps(f); len(ops) != 1 || ops[0] != opA {
		// Play the story to its end: B, then the backend finishes A.
		rb := send(tokB, gB, "B")
		slow.release(opA)
		rcWait(t, "A to be applied", func() bool {
			applied, _, _ := slow.state(opA)
			return len(applied) >= 2 || rb.code != http.StatusCreated
		})
		applied, _, _ := slow.state(opA)
		t.Fatalf("after the effect query's 404 the unknown mutations are %q: A (%s) was settled as not applied while the backend still held it; B got %d, and the backend now holds %q",
			ops, opA, rb.code, applied)
	}
	if n := f.logs.FilterMessageSnippet("before the mutation is quiet").Len(); n == 0 {
		t.Errorf("the not-yet-quiet 404 was not logged: %v", f.logs.All())
	}
	if g := f.counter("fencegate_proxy_unknown_not_quiet"); g != 1 {
		t.Errorf("fencegate_proxy_unknown_not_quiet = %v, want 1", g)
	}

	send(tokB, gB, "B").expect(t, http.StatusConflict, fencegate.CodeMutationUnknown)
	if applied, _, _ := slow.state(opA); len(applied) != 0 {
		t.Fatalf("the backend applied %q while A was held and unknown", applied)
	}

	// The backend finishes A's write, after the sidecar's deadline.
	slow.release(opA)
	rcWait(t, "A to be settled", func() bool { return len(rcUnknownOps(f)) == 0 })
	rs := rcReceipts(f, "doc/1", opA)
	if len(rs) != 1 || rs[0].Source != store.SourceReconciled || string(rs[0].Response.Body) != "effect of "+opA {
		t.Fatalf("receipts of A: %+v, want one RECONCILED receipt with the effect", rs)
	}
	if n := f.counter("fencegate_proxy_reconciled_total", "how", "effect_query", "outcome", "not_applied"); n != 0 {
		t.Errorf("reconciled not_applied by the effect query: %v", n)
	}
	if n := f.counter("fencegate_proxy_reconciled_total", "how", "effect_query", "outcome", "applied"); n != 1 {
		t.Errorf("reconciled applied by the effect query: %v, want 1", n)
	}
	rb := send(tokB, gB, "B")
	rb.expect(t, http.StatusCreated, "")
	if rb.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatal("B accepted without a receipt")
	}
	if applied, _, _ := slow.state(opA); strings.Join(applied, ",") != "A-slow,B" {
		t.Fatalf("the backend holds %q, want A-slow then B", applied)
	}
}

// TestOperatorNotAppliedWaitsForQuiet: the operator's race of story 1, on
// a clock the test drives. A's answer is a 500 (it proves nothing), so A is
// unknown; its marker's quiet time is the forward's deadline (taken before
// Begin: Begin + backend.timeout) plus backend.maxApplyDelay. Before it,
// POST /v1/reconcile with applied=false is refused 409 MAY_STILL_APPLY with
// quietAt, operationId and Retry-After, and writes nothing (B still gets
// MUTATION_UNKNOWN); a millisecond before it, still refused; at it,
// accepted, and B proceeds. "Applied" is accepted at any time.
func TestOperatorNotAppliedWaitsForQuiet(t *testing.T) {
	clk := clocktest.New(time.Now().Truncate(time.Millisecond))
	const delay = 10 * time.Minute
	f := newFixtureAt(t, clk, func(c *proxy.Config) { c.Backend.MaxApplyDelay = delay })
	proofAt := func(tok []byte, g fencegate.Grant) string {
		return string(f.issuer.SignStatus(f.issuer.StatusFor(tok, g, clk.Now())))
	}
	send := func(tok []byte, g fencegate.Grant, body string) answer {
		return f.do(call{path: "/v1/docs/1", owner: g.Owner, grant: string(tok), status: proofAt(tok, g), seg: "1", body: body})
	}
	begun := clk.Now()
	tokA, gA := f.crafted("doc/1", "worker-a", 5)
	f.back.setMode("500")
	send(tokA, gA, "A").expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	opA := gA.OperationRoot + "/1"

	var unknown []store.Mutation
	f.adminJSON("GET", "/v1/unknown", "", &unknown)
	quiet := begun.Add(f.cfg.Backend.Timeout + delay)
	if len(unknown) != 1 || !unknown[0].QuietAt.Equal(quiet) {
		t.Fatalf("unknown %+v, want A with quietAt %v (Begin + backend.timeout + maxApplyDelay)", unknown, quiet)
	}
	body := `{"resource":"doc/1","operationId":"` + opA + `","applied":false,"reason":"no row"}`
	refusal := func(when string, retryAfter int) {
		t.Helper()
		code, p, h := f.adminCall("POST", "/v1/reconcile", body)
		if code != http.StatusConflict || p == nil || p.Code != fencegate.CodeMayStillApply {
			t.Fatalf("%s: not-applied answered %d %+v, want 409 MAY_STILL_APPLY", when, code, p)
		}
		if p.Extra["operationId"] != opA || p.Extra["quietAt"] != quiet.UTC().Format(time.RFC3339Nano) {
			t.Errorf("%s: problem members %v, want operationId %s and quietAt %s", when, p.Extra, opA, quiet.UTC().Format(time.RFC3339Nano))
		}
		if got := h.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
			t.Errorf("%s: Retry-After %q, want %d", when, got, retryAfter)
		}
		rec, _ := f.record("doc/1")
		if !rec.Unknown() || rec.InFlight.OperationID != opA {
			t.Fatalf("%s: the refused reconcile changed the record: %+v", when, rec.InFlight)
		}
	}
	refusal("at once", int((f.cfg.Backend.Timeout+delay+time.Second-1)/time.Second))
	tokB, gB := f.crafted("doc/1", "worker-b", 6)
	send(tokB, gB, "B").expect(t, http.StatusConflict, fencegate.CodeMutationUnknown)
	clk.AdvanceTo(quiet.Add(-time.Millisecond))
	refusal("a millisecond before the quiet time", 1)
	if n := f.counter("fencegate_proxy_reconciled_total", "how", "operator"); n != 0 {
		t.Fatalf("refused reconciles counted: %v", n)
	}

	clk.AdvanceTo(quiet)
	if code, p, _ := f.adminCall("POST", "/v1/reconcile", body); code != http.StatusOK {
		t.Fatalf("not-applied at the quiet time: %d %+v", code, p)
	}
	send(tokB, gB, "B").expect(t, http.StatusCreated, "")

	// Applied needs no quiet time.
	tokC, gC := f.crafted("doc/1", "worker-c", 7)
	f.back.setMode("500")
	send(tokC, gC, "C").expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	opC := gC.OperationRoot + "/1"
	if code, p, _ := f.adminCall("POST", "/v1/reconcile", `{"resource":"doc/1","operationId":"`+opC+`","applied":true,"status":201,"body":"row"}`); code != http.StatusOK {
		t.Fatalf("applied before the quiet time: %d %+v", code, p)
	}
	if n := f.counter("fencegate_proxy_reconciled_total", "how", "operator"); n != 2 {
		t.Fatalf("operator reconciles counted: %v, want 2", n)
	}
}

// TestEffectQueryClosesSettlesAtOnce: on a route whose effect query is
// declared to close the operation (effectQueryCloses: the backend records
// a 404'd operation ID as refused and never applies it later), a 404
// settles "not applied" at once, long before the quiet time. On the same
// route without the declaration it settles nothing.
func TestEffectQueryClosesSettlesAtOnce(t *testing.T) {
	for _, closes := range []bool{true, false} {
		t.Run("closes="+strconv.FormatBool(closes), func(t *testing.T) {
			f := newFixture(t, func(c *proxy.Config) {
				c.Backend.MaxApplyDelay = time.Hour
				c.Routes[1].EffectQueryCloses = closes
			})
			op := rcUnknownOn(t, f)
			f.back.mu.Lock()
			f.back.effects[op] = false // the effect query answers 404
			f.back.mu.Unlock()
			f.run()
			if closes {
				rcWait(t, "the 404 to settle the mutation", func() bool { return len(rcUnknownOps(f)) == 0 })
				if n := f.counter("fencegate_proxy_reconciled_total", "how", "effect_query", "outcome", "not_applied"); n != 1 {
					t.Fatalf("reconciled not_applied: %v, want 1", n)
				}
				tok, g := f.crafted("doc/1", "worker-b", 6)
				f.do(call{path: "/v1/docs/1", owner: "worker-b", grant: string(tok), status: f.proof(tok, g), body: "six"}).expect(t, http.StatusCreated, "")
				return
			}
			rcWait(t, "the not-quiet 404 to be logged twice", func() bool {
				return f.logs.FilterMessageSnippet("before the mutation is quiet").Len() >= 2 || len(rcUnknownOps(f)) == 0
			})
			if ops := rcUnknownOps(f); len(ops) != 1 || ops[0] != op {
				t.Fatalf("unknown mutations %q: a 404 that does not close the operation settled it before its quiet time", ops)
			}
		})
	}
}

// pausingStore is a store whose Begin returns only after the sidecar's
// clock moved past the forward's deadline: a sidecar paused (GC, a frozen
// node) between its Begin and the send.
type pausingStore struct {
	store.Store
	clk   *clocktest.Clock
	pause time.Duration
}

func (s *pausingStore) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	res, err := s.Store.Begin(ctx, in)
	s.clk.Advance(s.pause)
	return res, err
}

// TestForwardDeadlineTakenBeforeBegin: the forward's deadline is Begin's
// start plus backend.timeout, the one the marker's quiet time was computed
// from. A sidecar that reaches the send only after it (paused between Begin
// and the send) sends nothing: the mutation is aborted, the client gets
// BACKEND_UNAVAILABLE (nothing sent, nothing recorded) and the backend
// never sees the write. Measured from after Begin, as before, the send
// would go out later than the quiet time promised.
func TestForwardDeadlineTakenBeforeBegin(t *testing.T) {
	clk := clocktest.New(time.Now().Truncate(time.Millisecond))
	f := newFixtureAt(t, clk)
	f.store = &pausingStore{Store: f.store, clk: clk, pause: f.cfg.Backend.Timeout}
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	tok, g := f.crafted("doc/1", "worker-a", 5)
	st := string(f.issuer.SignStatus(f.issuer.StatusFor(tok, g, clk.Now())))
	n := f.back.count()
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: st, body: "late"}).expect(t, http.StatusBadGateway, fencegate.CodeBackendUnavailable)
	if f.back.count() != n {
		t.Fatalf("a write past its forward's deadline reached the backend")
	}
	rec, _ := f.record("doc/1")
	if rec.InFlight != nil || rec.LastSeq != 0 {
		t.Fatalf("the late write left %+v", rec.InFlight)
	}
	if f.logs.FilterMessageSnippet("deadline passed before the request could be sent").Len() != 1 {
		t.Errorf("not logged: %v", f.logs.All())
	}
}

// TestDefaultMaxApplyDelayKeepsTheUnknownTarget: with the defaults
// (backend.timeout 30s, reconcile.interval 5s), an unknown mutation a 404
// settles at its quiet time is settled within the 15-minute target.
func TestDefaultMaxApplyDelayKeepsTheUnknownTarget(t *testing.T) {
	var c proxy.Config
	c.SetDefaults()
	if d := c.Backend.Timeout + c.Backend.MaxApplyDelay + c.Reconcile.Interval; d >= proxy.UnknownTarget {
		t.Fatalf("defaults settle a 404'd unknown after %v, not under the %v target", d, proxy.UnknownTarget)
	}
}
