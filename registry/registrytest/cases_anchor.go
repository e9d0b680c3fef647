package registrytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// The store anchor's conformance cases (registry/anchor.go): every backend
// registers stores, decides anchor batches in one step, keeps ledgers and
// anchors across restarts, pages anchors in order and serializes anchor
// steps of one resource between processes.

const (
	anchorStore  = "billing-api"
	anchorCaller = "spiffe://fencegate.test/sidecar"
	anchorGen    = "gen-one"
)

var (
	payA = "sha256:" + strings.Repeat("a", 64)
	payB = "sha256:" + strings.Repeat("b", 64)
)

// progress is fence f (root "root-<f>") with last segment last and, when
// pay is set, segment last+1 pending with that payload.
func progress(f, last uint64, pay string) fencegate.Progress {
	if f == 0 {
		return fencegate.Progress{}
	}
	p := fencegate.Progress{Fence: f, Root: fmt.Sprintf("root-%d", f), LastSeq: last, Lease: "lease-x", GrantDigest: "sha256:g"}
	if pay != "" {
		p.Pending = &fencegate.PendingOp{Seq: last + 1, PayloadDigest: pay, Owner: "worker"}
	}
	return p
}

func step(resource string, op fencegate.AnchorOp, prior, next fencegate.Progress) fencegate.AnchorItem {
	return fencegate.AnchorItem{Resource: resource, Op: op, Prior: prior, Next: next}
}

func (e *env) register(t testing.TB, reg *registry.Registry, gen string) registry.RegisterStoreResult {
	t.Helper()
	res, err := reg.RegisterStore(e.ctx, anchorCaller, anchorStore, gen)
	if err != nil {
		t.Fatalf("register %s: %v", gen, err)
	}
	return res
}

func (e *env) anchor(t testing.TB, reg *registry.Registry, gen string, items ...fencegate.AnchorItem) fencegate.AnchorResponse {
	t.Helper()
	resp, err := reg.Anchor(e.ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: gen, Items: items})
	if err != nil {
		t.Fatalf("anchor: %v", err)
	}
	if len(resp.Results) != len(items) {
		t.Fatalf("%d results for %d items", len(resp.Results), len(items))
	}
	return resp
}

// allAnchors pages through every anchor of the store with pages of limit.
func (e *env) allAnchors(t testing.TB, limit int) map[string]fencegate.Progress {
	t.Helper()
	out := map[string]fencegate.Progress{}
	after := ""
	for pages := 0; ; pages++ {
		if pages > fencegate.MaxAnchorBatch+2 {
			t.Fatal("paging does not end")
		}
		page, err := e.registry().Anchors(e.ctx, anchorCaller, anchorStore, after, limit)
		if err != nil {
			t.Fatalf("anchors after %q: %v", after, err)
		}
		for i, a := range page.Anchors {
			if a.Resource <= after || i > 0 && a.Resource <= page.Anchors[i-1].Resource {
				t.Fatalf("page after %q out of order: %v", after, a.Resource)
			}
			out[a.Resource] = a.Anchored
		}
		size := limit
		if size == 0 {
			size = fencegate.DefaultAnchorPage
		}
		// Next names the page's last resource when more follow, and only then.
		if len(page.Anchors) > size || page.Next != "" && (len(page.Anchors) != size || page.Next != page.Anchors[size-1].Resource) {
			t.Fatalf("page of %d (limit %d) with next %q", len(page.Anchors), limit, page.Next)
		}
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
}

func wantOutcomes(t testing.TB, resp fencegate.AnchorResponse, want ...fencegate.AnchorOutcome) {
	t.Helper()
	for i, w := range want {
		if resp.Results[i].Outcome != w {
			a, _ := json.Marshal(resp.Results[i].Anchored)
			t.Errorf("item %d (%s): %s, want %s (anchored %s)", i, resp.Results[i].Resource, resp.Results[i].Outcome, w, a)
		}
	}
}

// testAnchorRegister: the first registration anchors the generation, the
// same one matches, another is STORE_LOST (recorded once per generation
// presented, nothing else changed) until an admin acknowledges it.
func testAnchorRegister(t *testing.T, e *env) {
	reg := e.registry()
	first := e.register(t, reg, anchorGen)
	if !first.Created || first.Lost || first.View.Record.Generation != anchorGen || fencegate.ValidateLineage(first.View.Lineage) != nil {
		t.Fatalf("first registration: %+v", first)
	}
	if again := e.register(t, reg, anchorGen); again.Created || again.Lost || again.View.Record != first.View.Record {
		t.Fatalf("same generation: %+v", again)
	}
	if m := e.meta(t); m.Lineage != first.View.Lineage {
		t.Errorf("registration answered lineage %q, the meta holds %q", first.View.Lineage, m.Lineage)
	}
	// Another generation: STORE_LOST, recorded.
	for range 2 {
		res, err := reg.RegisterStore(e.ctx, anchorCaller, anchorStore, "gen-two")
		var lost *registry.StoreLostError
		if !errors.As(err, &lost) || !errors.Is(err, registry.ErrStoreLost) || lost.Anchored != anchorGen || lost.Presented != "gen-two" || !res.Lost {
			t.Fatalf("another generation: %+v %v", res, err)
		}
	}
	v, err := reg.Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || v.Record.Generation != anchorGen || v.Record.Presented != "gen-two" || v.Record.Losses != 1 {
		t.Fatalf("store after two lost registrations: %+v %v (one loss per generation presented)", v, err)
	}
	// Anchor requests of the lost generation are refused whole.
	_, err = reg.Anchor(e.ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-two",
		Items: []fencegate.AnchorItem{step("r/1", fencegate.AnchorSeed, progress(0, 0, ""), progress(1, 0, ""))}})
	wantErr(t, "anchor with the lost generation", err, registry.ErrStoreLost)
	if got := e.allAnchors(t, 0); len(got) != 0 {
		t.Fatalf("a refused request anchored %v", got)
	}
	testAcknowledgeNotPresented(t, e, reg, "gen-two")
	// The acknowledgement adopts it.
	ack, err := reg.AcknowledgeLoss(e.ctx, anchorStore, "gen-two")
	if err != nil || !ack.Adopted || ack.Previous != anchorGen || ack.View.Record.Generation != "gen-two" || ack.View.Record.Acknowledged != 1 || ack.View.Record.Presented != "" {
		t.Fatalf("acknowledge: %+v %v", ack, err)
	}
	if again, err := reg.AcknowledgeLoss(e.ctx, anchorStore, "gen-two"); err != nil || again.Adopted || again.View.Record.Acknowledged != 1 {
		t.Fatalf("acknowledge again: %+v %v", again, err)
	}
	if res := e.register(t, reg, "gen-two"); res.Created || res.Lost {
		t.Fatalf("registration after the acknowledgement: %+v", res)
	}
	_, err = reg.RegisterStore(e.ctx, anchorCaller, anchorStore, anchorGen)
	wantErr(t, "the old generation after the acknowledgement", err, registry.ErrStoreLost)
	_, err = reg.AcknowledgeLoss(e.ctx, "never-registered", "g")
	wantErr(t, "acknowledge a store never registered", err, registry.ErrNotFound)

	// A store never registered reads with no generation; anchors and
	// ledger events of it are refused.
	if v, err := reg.Store(e.ctx, anchorCaller, "other-store"); err != nil || v.Record.Generation != "" || v.Record.Store != "other-store" {
		t.Fatalf("unregistered store: %+v %v", v, err)
	}
	_, err = reg.Anchor(e.ctx, anchorCaller, "other-store", fencegate.AnchorRequest{Generation: "g",
		Items: []fencegate.AnchorItem{step("r/1", fencegate.AnchorSeed, progress(0, 0, ""), progress(1, 0, ""))}})
	wantErr(t, "anchor of an unregistered store", err, registry.ErrNotFound)
	_, err = reg.RecordLedger(e.ctx, anchorCaller, "other-store", fencegate.LedgerBody{Shape: "PUT /x", Kind: fencegate.LedgerEnforce})
	wantErr(t, "ledger of an unregistered store", err, registry.ErrNotFound)
}

// testAcknowledgeNotPresented: an acknowledgement of a generation no
// registration presented (presented is the one that was) is refused,
// nothing changed.
func testAcknowledgeNotPresented(t *testing.T, e *env, reg *registry.Registry, presented string) {
	t.Helper()
	_, err := reg.AcknowledgeLoss(e.ctx, anchorStore, "gen-three")
	wantErr(t, "acknowledge a generation not presented", err, registry.ErrNotPresented)
	if v, err := reg.Store(e.ctx, anchorCaller, anchorStore); err != nil || v.Record.Generation != anchorGen || v.Record.Presented != presented || v.Record.Acknowledged != 0 {
		t.Fatalf("store after a refused acknowledgement: %+v %v", v, err)
	}
}

// testAnchorPolicy: the policy matching fencegate-store/<store> says who
// may use the store's anchor; the admin acknowledgement does not need it.
func testAnchorPolicy(t *testing.T, e *env) {
	reg := e.registry()
	e.register(t, reg, anchorGen)
	if _, err := reg.PutPolicy(e.ctx, fencegate.Policy{Pattern: "fencegate-store/*", AllowedOwners: []string{"spiffe://fencegate.test/sidecar*"}}); err != nil {
		t.Fatal(err)
	}
	e.register(t, reg, anchorGen) // allowed
	const stranger = "spiffe://evil.test/x"
	item := []fencegate.AnchorItem{step("r/1", fencegate.AnchorSeed, progress(0, 0, ""), progress(1, 0, ""))}
	_, err := reg.RegisterStore(e.ctx, stranger, anchorStore, "gen-evil")
	wantErr(t, "register by a stranger", err, registry.ErrPolicyDenied)
	_, err = reg.Anchor(e.ctx, stranger, anchorStore, fencegate.AnchorRequest{Generation: anchorGen, Items: item})
	wantErr(t, "anchor by a stranger", err, registry.ErrPolicyDenied)
	_, err = reg.RecordLedger(e.ctx, stranger, anchorStore, fencegate.LedgerBody{Shape: "PUT /x", Kind: fencegate.LedgerForcedDowngrade})
	wantErr(t, "ledger by a stranger", err, registry.ErrPolicyDenied)
	_, err = reg.Store(e.ctx, stranger, anchorStore)
	wantErr(t, "store read by a stranger", err, registry.ErrPolicyDenied)
	_, err = reg.Anchors(e.ctx, stranger, anchorStore, "", 0)
	wantErr(t, "anchors read by a stranger", err, registry.ErrPolicyDenied)
	v, err := reg.Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || v.Record.Generation != anchorGen || v.Record.Losses != 0 || v.Resources != 0 {
		t.Fatalf("refused calls changed the store: %+v %v", v, err)
	}
	if _, err := reg.AcknowledgeLoss(e.ctx, anchorStore, anchorGen); err != nil {
		t.Fatalf("admin acknowledgement under a policy: %v", err)
	}
}

// testAnchorSteps: each op on a backend, a store found behind its anchor
// (LOSS, counted, nothing changed), the anchors listed in order, and none
// of it counted in the meta's revision.
func testAnchorSteps(t *testing.T, e *env) {
	reg := e.registry()
	e.register(t, reg, anchorGen)
	rev := e.meta(t).Revision
	resp := e.anchor(t, reg, anchorGen,
		step("r/b", fencegate.AnchorBegin, progress(0, 0, ""), progress(1, 0, payA)),
		step("r/a", fencegate.AnchorSeed, progress(0, 0, ""), progress(4, 7, "")),
		step("r/b", fencegate.AnchorSettle, progress(1, 0, payA), progress(1, 0, "")),
		step("r/b", fencegate.AnchorBegin, progress(1, 0, ""), progress(1, 0, payB)),
		step("r/c", fencegate.AnchorPause, progress(0, 0, ""), fencegate.Progress{Paused: "OPERATOR"}),
	)
	wantOutcomes(t, resp, fencegate.AnchorAnchored, fencegate.AnchorAnchored, fencegate.AnchorAnchored, fencegate.AnchorAnchored, fencegate.AnchorAnchored)
	if m := e.meta(t); m.Revision != rev || resp.Lineage != m.Lineage {
		t.Errorf("an anchor batch moved the revision %d -> %d (or answered lineage %q, the meta's %q)", rev, m.Revision, resp.Lineage, m.Lineage)
	}
	got := e.allAnchors(t, 2)
	want := map[string]fencegate.Progress{"r/a": progress(4, 7, ""), "r/b": progress(1, 0, payB), "r/c": {Paused: "OPERATOR"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("anchors %+v, want %+v", got, want)
	}
	// The store lost its data: a Begin from an empty record, a Seed behind
	// the anchor, a conflicting settle. Nothing changes but the counters.
	resp = e.anchor(t, reg, anchorGen,
		step("r/b", fencegate.AnchorBegin, progress(0, 0, ""), progress(1, 0, payA)),
		step("r/a", fencegate.AnchorSeed, progress(0, 0, ""), progress(4, 6, "")),
		step("r/b", fencegate.AnchorSettle, progress(1, 0, payA), progress(1, 0, "")),
	)
	wantOutcomes(t, resp, fencegate.AnchorLoss, fencegate.AnchorLoss, fencegate.AnchorConflict)
	if !reflect.DeepEqual(resp.Results[0].Anchored, progress(1, 0, payB)) {
		t.Errorf("LOSS answered anchor %+v, want what the store lost", resp.Results[0].Anchored)
	}
	if got := e.allAnchors(t, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("anchors after losses %+v, want unchanged %+v", got, want)
	}
	v, err := reg.Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || v.Record.Losses != 2 || v.Resources != 3 || !strings.Contains(v.Record.LastLoss, "r/a") {
		t.Fatalf("store after losses: %+v %v", v, err)
	}
	// The repaired store pauses (PAUSE) and, once resumed, goes on.
	resp = e.anchor(t, reg, anchorGen,
		step("r/b", fencegate.AnchorPause, progress(1, 0, payB), func() fencegate.Progress { p := progress(1, 0, payB); p.Paused = "STORE_LOSS"; return p }()),
		step("r/b", fencegate.AnchorResume, fencegate.Progress{}, fencegate.Progress{}),
		step("r/b", fencegate.AnchorBegin, progress(1, 1, ""), progress(1, 1, payA)),
	)
	wantOutcomes(t, resp, fencegate.AnchorAnchored, fencegate.AnchorAnchored, fencegate.AnchorAnchored)
	if got := e.allAnchors(t, 1)["r/b"]; !reflect.DeepEqual(got, progress(1, 1, payA)) {
		t.Fatalf("r/b after repair and resume: %+v", got)
	}
	if m := e.meta(t); m.Revision != rev {
		t.Errorf("anchor batches moved the revision %d -> %d", rev, m.Revision)
	}
	// Bad input changes nothing.
	before := e.allAnchors(t, 0)
	for name, items := range map[string][]fencegate.AnchorItem{
		"no items":        nil,
		"unknown op":      {step("r/a", "begin", progress(0, 0, ""), progress(1, 0, payA))},
		"bad resource":    {step("r/../a", fencegate.AnchorSeed, progress(0, 0, ""), progress(9, 0, ""))},
		"one bad of two":  {step("r/a", fencegate.AnchorSeed, progress(0, 0, ""), progress(9, 0, "")), step("r/a", fencegate.AnchorSettle, progress(0, 0, ""), progress(0, 0, ""))},
		"invalid next":    {step("r/a", fencegate.AnchorSeed, progress(0, 0, ""), fencegate.Progress{Fence: 9})},
		"begin w/o op":    {step("r/a", fencegate.AnchorBegin, progress(4, 7, ""), progress(4, 7, ""))},
		"pause w/o pause": {step("r/a", fencegate.AnchorPause, progress(4, 7, ""), progress(4, 7, ""))},
	} {
		_, err := reg.Anchor(e.ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: anchorGen, Items: items})
		wantErr(t, "anchor with "+name, err, registry.ErrInvalidInput)
	}
	if _, err := reg.Anchors(e.ctx, anchorCaller, anchorStore, "", fencegate.MaxAnchorPage+1); !errors.Is(err, registry.ErrInvalidInput) {
		t.Errorf("a page over the limit: %v", err)
	}
	if after := e.allAnchors(t, 0); !reflect.DeepEqual(after, before) {
		t.Fatalf("bad input changed the anchors: %+v -> %+v", before, after)
	}
}

// testAnchorLedger: a store's ledger at the registry.
func testAnchorLedger(t *testing.T, e *env) {
	reg := e.registry
	e.register(t, reg(), anchorGen)
	const shape = "PUT /v1/items/{}"
	ledger := func(kind string) registry.StoreView {
		v, err := reg().RecordLedger(e.ctx, anchorCaller, anchorStore, fencegate.LedgerBody{Shape: shape, Kind: kind, Detail: "test"})
		if err != nil {
			t.Fatalf("ledger %s: %v", kind, err)
		}
		return v
	}
	v := ledger(fencegate.LedgerEnforce)
	if len(v.Ledger) != 1 || v.Ledger[0].EnforcedSince == 0 || len(v.Ledger[0].History) != 1 {
		t.Fatalf("after ENFORCE: %+v", v.Ledger)
	}
	ledger(fencegate.LedgerEnforce) // again: no new event
	for range fencegate.MaxLedgerHistory {
		ledger(fencegate.LedgerForcedDowngrade)
		ledger(fencegate.LedgerEnforce)
	}
	got, err := reg().Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || len(got.Ledger) != 1 || got.Ledger[0].EnforcedSince == 0 || len(got.Ledger[0].History) != fencegate.MaxLedgerHistory {
		t.Fatalf("ledger after %d events: %d entries, the first with %d events (%v); want 1 enforced, with the newest %d",
			2*fencegate.MaxLedgerHistory+1, len(got.Ledger), len(got.Ledger[0].History), err, fencegate.MaxLedgerHistory)
	}
	if h := got.Ledger[0].History; h[0].Kind != fencegate.LedgerForcedDowngrade || h[len(h)-1].Kind != fencegate.LedgerEnforce {
		t.Errorf("history kept %s..%s, want the newest events", h[0].Kind, h[len(h)-1].Kind)
	}
	if e.opener.NotDurable != "" {
		return
	}
	e.restart(t)
	again, err := reg().Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("store after a restart %+v %v, before %+v", again, err, got)
	}
}

// testAnchorRestart: anchors, the store's record and counters survive a
// restart.
func testAnchorRestart(t *testing.T, e *env) {
	e.requireDurable(t)
	reg := e.registry
	e.register(t, reg(), anchorGen)
	e.anchor(t, reg(), anchorGen,
		step("r/1", fencegate.AnchorBegin, progress(0, 0, ""), progress(3, 0, payA)),
		step("r/2", fencegate.AnchorSeed, progress(0, 0, ""), progress(1, 0, "")),
		step("r/2", fencegate.AnchorSeed, progress(0, 0, ""), progress(0, 0, "")), // LOSS
	)
	before, err := reg().Store(e.ctx, anchorCaller, anchorStore)
	if err != nil {
		t.Fatal(err)
	}
	anchors := e.allAnchors(t, 0)
	e.restart(t)
	after, err := reg().Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || !reflect.DeepEqual(after, before) || after.Resources != 2 || after.Record.Losses != 1 {
		t.Fatalf("store across a restart: %+v -> %+v (%v)", before, after, err)
	}
	if got := e.allAnchors(t, 0); !reflect.DeepEqual(got, anchors) {
		t.Fatalf("anchors across a restart: %+v -> %+v", anchors, got)
	}
	if res := e.register(t, reg(), anchorGen); res.Created || res.Lost {
		t.Fatalf("registration after a restart: %+v", res)
	}
	resp := e.anchor(t, reg(), anchorGen, step("r/1", fencegate.AnchorBegin, progress(0, 0, ""), progress(1, 0, payB)))
	wantOutcomes(t, resp, fencegate.AnchorLoss)
}

// testAnchorFullBatch: a batch of MaxAnchorBatch items is one step; the
// anchors page through in order.
func testAnchorFullBatch(t *testing.T, e *env) {
	reg := e.registry()
	e.register(t, reg, anchorGen)
	items := make([]fencegate.AnchorItem, fencegate.MaxAnchorBatch)
	for i := range items {
		items[i] = step(fmt.Sprintf("batch/r%04d", i), fencegate.AnchorBegin, progress(0, 0, ""), progress(uint64(i+1), 0, payA))
	}
	resp := e.anchor(t, reg, anchorGen, items...)
	for i, r := range resp.Results {
		if r.Outcome != fencegate.AnchorAnchored || r.Resource != items[i].Resource {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	got := e.allAnchors(t, 100)
	if len(got) != fencegate.MaxAnchorBatch {
		t.Fatalf("%d anchors listed, want %d", len(got), fencegate.MaxAnchorBatch)
	}
	for _, it := range items {
		if !reflect.DeepEqual(got[it.Resource], it.Next) {
			t.Fatalf("%s anchored %+v, want %+v", it.Resource, got[it.Resource], it.Next)
		}
	}
	if v, err := reg.Store(e.ctx, anchorCaller, anchorStore); err != nil || v.Resources != fencegate.MaxAnchorBatch {
		t.Fatalf("store counts %+v %v", v.Resources, err)
	}
	// The same batch again: every Prior (empty) is behind its anchor now.
	resp = e.anchor(t, reg, anchorGen, items...)
	for i, r := range resp.Results {
		if r.Outcome != fencegate.AnchorLoss {
			t.Fatalf("item %d again: %+v", i, r)
		}
	}
}

// testAnchorConcurrent: contenders in two processes race BEGINs of one
// resource from the same anchor, round after round. The backend serializes
// them: in every round exactly one is ANCHORED and the others, whose Prior
// no longer covers the anchor, are LOSS; no loss count is lost either.
func testAnchorConcurrent(t *testing.T, e *env) {
	const (
		rounds     = 12
		contenders = 3
		resource   = "race/one"
	)
	regs := []*registry.Registry{e.registry(), e.otherProcess(t)}
	e.register(t, regs[0], anchorGen)
	base := progress(1, 0, "")
	e.anchor(t, regs[0], anchorGen, step(resource, fencegate.AnchorSeed, progress(0, 0, ""), base))
	for round := range rounds {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []fencegate.Progress
		)
		start := make(chan struct{})
		for c := range contenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := base
				next.Pending = &fencegate.PendingOp{Seq: base.LastSeq + 1, PayloadDigest: fmt.Sprintf("sha256:%064x", round*contenders+c)}
				<-start
				resp, err := regs[c%2].Anchor(e.ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: anchorGen,
					Items: []fencegate.AnchorItem{step(resource, fencegate.AnchorBegin, base, next)}})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("round %d contender %d: %v", round, c, err)
				case resp.Results[0].Outcome == fencegate.AnchorAnchored:
					winners = append(winners, next)
				case resp.Results[0].Outcome != fencegate.AnchorLoss:
					t.Errorf("round %d contender %d: %+v", round, c, resp.Results[0])
				}
			}()
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d BEGINs anchored from the same anchor, want exactly 1", round, len(winners))
		}
		if got := e.allAnchors(t, 0)[resource]; !reflect.DeepEqual(got, winners[0]) {
			t.Fatalf("round %d: anchor %+v, the winner's %+v", round, got, winners[0])
		}
		// The winner's segment commits; the next round starts from there.
		base = winners[0]
		base.LastSeq, base.Pending = base.Pending.Seq, nil
	}
	v, err := regs[1].Store(e.ctx, anchorCaller, anchorStore)
	if err != nil || v.Record.Losses != rounds*(contenders-1) {
		t.Fatalf("losses %d (%v), want %d: a concurrent loss count was lost", v.Record.Losses, err, rounds*(contenders-1))
	}
}
