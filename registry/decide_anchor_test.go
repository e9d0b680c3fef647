package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

var (
	payA = "sha256:" + strings.Repeat("a", 64)
	payB = "sha256:" + strings.Repeat("b", 64)
)

// pr is a Progress at fence f, root "r<f>", last segment last, with
// segment last+1 pending (payload pay) when pay is not "".
func pr(f, last uint64, pay string) fencegate.Progress {
	if f == 0 {
		return fencegate.Progress{}
	}
	p := fencegate.Progress{Fence: f, Root: fmt.Sprintf("r%d", f), LastSeq: last, Lease: "lease", GrantDigest: "sha256:g"}
	if pay != "" {
		p.Pending = &fencegate.PendingOp{Seq: last + 1, PayloadDigest: pay, Owner: "worker"}
	}
	return p
}

func paused(p fencegate.Progress, reason string) fencegate.Progress { p.Paused = reason; return p }

// js is v as JSON, for messages (a Progress's pending mutation is a
// pointer).
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func item(op fencegate.AnchorOp, prior, next fencegate.Progress) fencegate.AnchorItem {
	return fencegate.AnchorItem{Resource: "res/1", Op: op, Prior: prior, Next: next}
}

// TestAnchorStep is the table of one anchor step: the outcome and the
// anchor after it, for each op against the anchor it meets.
func TestAnchorStep(t *testing.T) {
	const (
		A = fencegate.AnchorAnchored
		L = fencegate.AnchorLoss
		C = fencegate.AnchorConflict
	)
	for _, c := range []struct {
		name    string
		anchor  fencegate.Progress
		it      fencegate.AnchorItem
		outcome fencegate.AnchorOutcome
		after   fencegate.Progress
	}{
		// BEGIN: Prior must cover the anchor; the anchor becomes Next.
		{"begin on nothing anchored", pr(0, 0, ""), item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA)), A, pr(1, 0, payA)},
		{"begin next segment", pr(2, 4, ""), item(fencegate.AnchorBegin, pr(2, 4, ""), pr(2, 4, payA)), A, pr(2, 4, payA)},
		{"begin after the anchored pending committed", pr(2, 4, payA), item(fencegate.AnchorBegin, pr(2, 5, ""), pr(2, 5, payB)), A, pr(2, 5, payB)},
		{"begin of a higher fence over a pending one settled applied", pr(2, 4, payA), item(fencegate.AnchorBegin, pr(2, 5, ""), pr(3, 0, payB)), A, pr(3, 0, payB)},
		{"begin: store restored before the pending Begin (story 2)", pr(2, 4, payA), item(fencegate.AnchorBegin, pr(2, 4, ""), pr(2, 4, payA)), L, pr(2, 4, payA)},
		{"begin: store emptied", pr(2, 4, ""), item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA)), L, pr(2, 4, "")},
		{"begin: store lost a committed segment", pr(2, 4, ""), item(fencegate.AnchorBegin, pr(2, 3, ""), pr(2, 3, payA)), L, pr(2, 4, "")},
		{"begin: store at a lower fence", pr(5, 0, ""), item(fencegate.AnchorBegin, pr(4, 9, ""), pr(4, 9, payA)), L, pr(5, 0, "")},
		{"begin: store lost the anchored pause", paused(pr(2, 4, ""), "STORE_LOSS"), item(fencegate.AnchorBegin, pr(2, 4, ""), pr(2, 4, payA)), L, paused(pr(2, 4, ""), "STORE_LOSS")},
		{"begin whose next would lower the anchor", pr(2, 4, ""), item(fencegate.AnchorBegin, pr(3, 0, ""), pr(1, 9, payA)), C, pr(2, 4, "")},

		// SEED: Next must cover the anchor.
		{"seed a new registry", pr(0, 0, ""), item(fencegate.AnchorSeed, pr(0, 0, ""), pr(7, 3, "")), A, pr(7, 3, "")},
		{"seed ahead of the anchor", pr(7, 3, ""), item(fencegate.AnchorSeed, pr(0, 0, ""), pr(7, 5, payA)), A, pr(7, 5, payA)},
		{"seed equal", pr(7, 3, ""), item(fencegate.AnchorSeed, pr(0, 0, ""), pr(7, 3, "")), A, pr(7, 3, "")},
		{"seed behind the anchor", pr(7, 3, ""), item(fencegate.AnchorSeed, pr(0, 0, ""), pr(7, 2, "")), L, pr(7, 3, "")},
		{"seed of an empty store over an anchor", pr(7, 3, ""), item(fencegate.AnchorSeed, pr(0, 0, ""), pr(0, 0, "")), L, pr(7, 3, "")},

		// SETTLE: a compare-and-set on the anchored pending mutation.
		{"settle the anchored pending", pr(2, 4, payA), item(fencegate.AnchorSettle, pr(2, 4, payA), pr(2, 4, "")), A, pr(2, 4, "")},
		{"settle keeps the anchored pause", paused(pr(2, 4, payA), "OPERATOR"), item(fencegate.AnchorSettle, paused(pr(2, 4, payA), "OPERATOR"), paused(pr(2, 4, ""), "OPERATOR")), A, paused(pr(2, 4, ""), "OPERATOR")},
		{"settle retried (already settled)", pr(2, 4, ""), item(fencegate.AnchorSettle, pr(2, 4, payA), pr(2, 4, "")), A, pr(2, 4, "")},
		{"settle of another payload", pr(2, 4, payA), item(fencegate.AnchorSettle, pr(2, 4, payB), pr(2, 4, "")), C, pr(2, 4, payA)},
		{"settle of another segment", pr(2, 5, payA), item(fencegate.AnchorSettle, pr(2, 4, payA), pr(2, 4, "")), C, pr(2, 5, payA)},
		{"settle under another fence", pr(3, 0, payA), item(fencegate.AnchorSettle, pr(2, 0, payA), pr(2, 0, "")), C, pr(3, 0, payA)},
		{"settle whose next drops a committed segment", pr(2, 4, payA), item(fencegate.AnchorSettle, pr(2, 4, payA), pr(2, 3, "")), C, pr(2, 4, payA)},
		{"settle whose next drops the anchored pause", paused(pr(2, 4, payA), "OPERATOR"), item(fencegate.AnchorSettle, paused(pr(2, 4, payA), "OPERATOR"), pr(2, 4, "")), C, paused(pr(2, 4, payA), "OPERATOR")},
		{"settle with nothing anchored", pr(0, 0, ""), item(fencegate.AnchorSettle, pr(2, 4, payA), pr(2, 4, "")), A, pr(2, 4, "")},
		{"settle under a higher fence keeps a lower anchored pending", pr(1, 0, payA), item(fencegate.AnchorSettle, pr(2, 0, payB), pr(2, 0, "")), C, pr(1, 0, payA)},
		{"pause under a higher fence keeps a lower anchored pending", pr(1, 0, payA), item(fencegate.AnchorPause, paused(pr(2, 0, payB), "STORE_LOSS"), paused(pr(2, 0, payB), "STORE_LOSS")), A, paused(pr(1, 0, payA), "STORE_LOSS")},
		{"pause under a higher fence with nothing pending", pr(1, 3, ""), item(fencegate.AnchorPause, paused(pr(2, 0, payB), "OPERATOR"), paused(pr(2, 0, payB), "OPERATOR")), A, paused(pr(2, 0, payB), "OPERATOR")},
		{"settle under a higher fence with nothing pending", pr(1, 3, ""), item(fencegate.AnchorSettle, pr(2, 0, payB), pr(2, 0, "")), A, pr(2, 0, "")},

		// PAUSE and RESUME: always anchored.
		{"pause", pr(2, 4, payA), item(fencegate.AnchorPause, pr(2, 4, payA), paused(pr(2, 4, payA), "FENCE_REGRESSION")), A, paused(pr(2, 4, payA), "FENCE_REGRESSION")},
		{"pause of a store behind its anchor keeps the anchor", pr(2, 4, payA), item(fencegate.AnchorPause, pr(0, 0, ""), paused(pr(0, 0, ""), "STORE_LOSS")), A, paused(pr(2, 4, payA), "STORE_LOSS")},
		{"pause on nothing anchored", pr(0, 0, ""), item(fencegate.AnchorPause, pr(0, 0, ""), paused(pr(0, 0, ""), "OPERATOR")), A, paused(pr(0, 0, ""), "OPERATOR")},
		{"resume", paused(pr(2, 4, ""), "STORE_LOSS"), item(fencegate.AnchorResume, paused(pr(2, 4, ""), "STORE_LOSS"), pr(2, 4, "")), A, pr(2, 4, "")},
		{"resume keeps the progress whatever next says", paused(pr(2, 4, payA), "OPERATOR"), item(fencegate.AnchorResume, pr(0, 0, ""), pr(0, 0, "")), A, pr(2, 4, payA)},
		{"resume of nothing", pr(0, 0, ""), item(fencegate.AnchorResume, pr(0, 0, ""), pr(0, 0, "")), A, pr(0, 0, "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.it.Validate(); err != nil {
				t.Fatalf("the table's item is invalid: %v", err)
			}
			before := c.anchor
			outcome, after := registry.AnchorStep(c.anchor, c.it)
			if outcome != c.outcome || !registry.SameProgress(after, c.after) {
				t.Fatalf("%s on %s: %s %s, want %s %s", c.it.Op, js(c.anchor), outcome, js(after), c.outcome, js(c.after))
			}
			if outcome != fencegate.AnchorAnchored && !registry.SameProgress(after, before) {
				t.Fatalf("a %s changed the anchor to %s", outcome, js(after))
			}
			// Nothing but RESUME and a SETTLE ever weakens the anchor.
			if outcome == fencegate.AnchorAnchored && c.it.Op != fencegate.AnchorResume && c.it.Op != fencegate.AnchorSettle && !after.Covers(before) {
				t.Fatalf("%s lowered the anchor %s to %s", c.it.Op, js(before), js(after))
			}
		})
	}
}

const (
	store   = "billing-api"
	caller  = "spiffe://test/sidecar"
	gen1    = "gen-1"
	gen2    = "gen-2"
	lineage = metaLineage
)

func storeSnap(gen string) registry.StoreSnapshot {
	s := registry.StoreSnapshot{Meta: registry.Meta{IssuerEpoch: 1, Revision: 10, Lineage: lineage}}
	if gen != "" {
		s.Store = &registry.StoreRecord{Store: store, Generation: gen, RegisteredAt: t0.UnixMilli()}
	}
	return s
}

func regIn(gen string) registry.RegisterStoreInput {
	return registry.RegisterStoreInput{Store: store, Caller: caller, Generation: gen, Lineage: candidateLineage, Now: t0}
}

func TestDecideRegisterStore(t *testing.T) {
	denied := func(s *registry.StoreSnapshot) {
		s.Policy = fencegate.Policy{Pattern: "fencegate-store/*", AllowedOwners: []string{"spiffe://test/other"}}
	}
	for _, c := range []struct {
		name    string
		snap    registry.StoreSnapshot
		mut     func(*registry.StoreSnapshot)
		in      registry.RegisterStoreInput
		created bool
		lost    bool
		writes  bool
		err     error
	}{
		{"first registration anchors", storeSnap(""), nil, regIn(gen1), true, false, true, nil},
		{"same generation matches", storeSnap(gen1), nil, regIn(gen1), false, false, false, nil},
		{"another generation is lost, recorded", storeSnap(gen1), nil, regIn(gen2), false, true, true, nil},
		{"the same other generation again: not counted again", storeSnap(gen1), func(s *registry.StoreSnapshot) { s.Store.Presented = gen2 }, regIn(gen2), false, true, false, nil},
		{"allowed by a policy", storeSnap(gen1), func(s *registry.StoreSnapshot) {
			s.Policy = fencegate.Policy{Pattern: "fencegate-store/*", AllowedOwners: []string{"spiffe://test/*"}}
		}, regIn(gen1), false, false, false, nil},
		{"a tombstone allows", storeSnap(gen1), func(s *registry.StoreSnapshot) {
			denied(s)
			s.Policy.Deleted = true
		}, regIn(gen1), false, false, false, nil},
		{"denied by the policy", storeSnap(""), denied, regIn(gen1), false, false, false, registry.ErrPolicyDenied},
		{"bad store name", storeSnap(""), nil, func() registry.RegisterStoreInput { in := regIn(gen1); in.Store = "a/b"; return in }(), false, false, false, registry.ErrInvalidInput},
		{"no caller", storeSnap(""), nil, func() registry.RegisterStoreInput { in := regIn(gen1); in.Caller = ""; return in }(), false, false, false, registry.ErrInvalidInput},
		{"no generation", storeSnap(""), nil, regIn(""), false, false, false, registry.ErrInvalidInput},
		{"generation with a control byte", storeSnap(""), nil, regIn("g\x01"), false, false, false, registry.ErrInvalidInput},
		{"no time", storeSnap(""), nil, func() registry.RegisterStoreInput { in := regIn(gen1); in.Now = time.Time{}; return in }(), false, false, false, registry.ErrInvalidInput},
		{"record of another store read", storeSnap(gen1), func(s *registry.StoreSnapshot) { s.Store.Store = "other" }, regIn(gen1), false, false, false, registry.ErrBackend},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := c.snap
			if c.mut != nil {
				c.mut(&snap)
			}
			res, ch, err := registry.DecideRegisterStore(snap, c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) || !ch.Empty() {
					t.Fatalf("err %v, change %+v; want %v and no change", err, ch, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Created != c.created || res.Lost != c.lost || c.writes == ch.Empty() {
				t.Fatalf("created %v lost %v change %+v; want %v %v, writes %v", res.Created, res.Lost, ch, c.created, c.lost, c.writes)
			}
			if ch.Meta != nil || len(ch.Anchors) != 0 || ch.Ledger != nil {
				t.Fatalf("a registration wrote %+v beyond the store's record", ch)
			}
			want := gen1
			if c.created {
				want = c.in.Generation
			}
			if res.View.Record.Generation != want || res.View.Lineage != lineage {
				t.Fatalf("view %+v, want generation %s (a loss never replaces it)", res.View, want)
			}
			if c.lost && c.writes {
				if r := ch.Store; r.Generation != gen1 || r.Presented != gen2 || r.Losses != snap.Store.Losses+1 || r.LastLossAt != t0.UnixMilli() || !strings.Contains(r.LastLoss, gen2) {
					t.Fatalf("lost registration recorded %+v", r)
				}
			}
			if c.created && (ch.Store.Generation != c.in.Generation || ch.Store.RegisteredAt != t0.UnixMilli() || ch.Store.Store != store) {
				t.Fatalf("created %+v", ch.Store)
			}
		})
	}
	// A data set without a lineage gets the candidate, once, with its
	// revision counted.
	snap := storeSnap("")
	snap.Meta.Lineage = ""
	res, ch, err := registry.DecideRegisterStore(snap, regIn(gen1))
	if err != nil || ch.Meta == nil || ch.Meta.Lineage != candidateLineage || ch.Meta.Revision != 11 || res.View.Lineage != candidateLineage {
		t.Fatalf("no lineage yet: %+v %+v %v", res, ch.Meta, err)
	}
}

func anchorSnap(gen string, anchors map[string]fencegate.Progress) registry.AnchorSnapshot {
	return registry.AnchorSnapshot{StoreSnapshot: storeSnap(gen), Anchors: anchors}
}

func anchorIn(gen string, items ...fencegate.AnchorItem) registry.AnchorInput {
	return registry.AnchorInput{Store: store, Caller: caller, Request: fencegate.AnchorRequest{Generation: gen, Items: items}, Lineage: candidateLineage, Now: t0}
}

func on(resource string, it fencegate.AnchorItem) fencegate.AnchorItem {
	it.Resource = resource
	return it
}

// TestDecideAnchorRefusals: a request refused as a whole writes nothing.
func TestDecideAnchorRefusals(t *testing.T) {
	ok := item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA))
	for _, c := range []struct {
		name string
		snap registry.AnchorSnapshot
		in   registry.AnchorInput
		err  error
	}{
		{"not registered", anchorSnap("", nil), anchorIn(gen1, ok), registry.ErrNotFound},
		{"another generation", anchorSnap(gen1, nil), anchorIn(gen2, ok), registry.ErrStoreLost},
		{"no items", anchorSnap(gen1, nil), anchorIn(gen1), registry.ErrInvalidInput},
		{"malformed item", anchorSnap(gen1, nil), anchorIn(gen1, ok, item("NOPE", pr(0, 0, ""), pr(0, 0, ""))), registry.ErrInvalidInput},
		{"no generation", anchorSnap(gen1, nil), anchorIn("", ok), registry.ErrInvalidInput},
		{"bad caller", anchorSnap(gen1, nil), func() registry.AnchorInput { in := anchorIn(gen1, ok); in.Caller = "a b"; return in }(), registry.ErrInvalidInput},
		{"denied", func() registry.AnchorSnapshot {
			s := anchorSnap(gen1, nil)
			s.Policy = fencegate.Policy{Pattern: "fencegate-store/billing-api", AllowedOwners: []string{"spiffe://test/x"}}
			return s
		}(), anchorIn(gen1, ok), registry.ErrPolicyDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, ch, err := registry.DecideAnchor(c.snap, c.in)
			if !errors.Is(err, c.err) || !ch.Empty() || len(resp.Results) != 0 {
				t.Fatalf("err %v, change %s, results %s; want %v and nothing", err, js(ch), js(resp.Results), c.err)
			}
		})
	}
	_, _, err := registry.DecideAnchor(anchorSnap(gen1, nil), anchorIn(gen2, ok))
	var lost *registry.StoreLostError
	if !errors.As(err, &lost) || lost.Anchored != gen1 || lost.Presented != gen2 || lost.Store != store {
		t.Fatalf("store lost error %#v", err)
	}
}

// TestDecideAnchorBatch: items are decided in order, each on what the
// ones before left, in one change that writes only what changed and
// counts the losses.
func TestDecideAnchorBatch(t *testing.T) {
	anchors := map[string]fencegate.Progress{
		"r/lost":  pr(5, 2, ""),
		"r/same":  pr(3, 1, ""),
		"r/other": pr(4, 0, payA),
	}
	in := anchorIn(gen1,
		// a new resource begun, settled and begun again in one batch
		on("r/new", item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA))),
		on("r/new", item(fencegate.AnchorSettle, pr(1, 0, payA), pr(1, 0, ""))),
		on("r/new", item(fencegate.AnchorBegin, pr(1, 0, ""), pr(1, 0, payB))),
		// a store behind its anchor: LOSS, then its pause is anchored
		on("r/lost", item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA))),
		on("r/lost", item(fencegate.AnchorPause, pr(0, 0, ""), paused(pr(0, 0, ""), "STORE_LOSS"))),
		// a seed equal to the anchor: nothing to write
		on("r/same", item(fencegate.AnchorSeed, pr(0, 0, ""), pr(3, 1, ""))),
		// a conflicting settle: nothing written
		on("r/other", item(fencegate.AnchorSettle, pr(4, 0, payB), pr(4, 0, ""))),
		// a second loss in the batch
		on("r/other", item(fencegate.AnchorSeed, pr(0, 0, ""), pr(3, 0, ""))),
	)
	snap := anchorSnap(gen1, anchors)
	snap.Store.Losses = 2
	resp, ch, err := registry.DecideAnchor(snap, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		resource string
		outcome  fencegate.AnchorOutcome
		anchored fencegate.Progress
	}{
		{"r/new", fencegate.AnchorAnchored, pr(1, 0, payA)},
		{"r/new", fencegate.AnchorAnchored, pr(1, 0, "")},
		{"r/new", fencegate.AnchorAnchored, pr(1, 0, payB)},
		{"r/lost", fencegate.AnchorLoss, pr(5, 2, "")},
		{"r/lost", fencegate.AnchorAnchored, paused(pr(5, 2, ""), "STORE_LOSS")},
		{"r/same", fencegate.AnchorAnchored, pr(3, 1, "")},
		{"r/other", fencegate.AnchorConflict, pr(4, 0, payA)},
		{"r/other", fencegate.AnchorLoss, pr(4, 0, payA)},
	}
	if len(resp.Results) != len(want) || resp.Lineage != lineage {
		t.Fatalf("results %+v lineage %q", resp.Results, resp.Lineage)
	}
	for i, w := range want {
		r := resp.Results[i]
		if r.Resource != w.resource || r.Outcome != w.outcome || !registry.SameProgress(r.Anchored, w.anchored) {
			t.Errorf("item %d: %s %s %+v, want %s %s %+v", i, r.Resource, r.Outcome, r.Anchored, w.resource, w.outcome, w.anchored)
		}
	}
	wrote := map[string]fencegate.Progress{}
	var order []string
	for _, a := range ch.Anchors {
		if a.Store != store {
			t.Errorf("anchor written for store %q", a.Store)
		}
		wrote[a.Resource] = a.Progress
		order = append(order, a.Resource)
	}
	if !reflect.DeepEqual(order, []string{"r/new", "r/lost"}) {
		t.Fatalf("wrote anchors of %v, want r/new and r/lost only (in first-seen order)", order)
	}
	if !registry.SameProgress(wrote["r/new"], pr(1, 0, payB)) || !registry.SameProgress(wrote["r/lost"], paused(pr(5, 2, ""), "STORE_LOSS")) {
		t.Fatalf("wrote %+v", wrote)
	}
	if ch.Meta != nil || ch.Ledger != nil {
		t.Fatalf("an anchor batch wrote the meta or the ledger: %+v", ch)
	}
	if ch.Store == nil || ch.Store.Losses != 4 || ch.Store.LastLossAt != t0.UnixMilli() || !strings.Contains(ch.Store.LastLoss, "r/other") || ch.Store.Generation != gen1 {
		t.Fatalf("losses recorded as %+v, want 2 more", ch.Store)
	}
	if !registry.SameProgress(anchors["r/other"], pr(4, 0, payA)) {
		t.Fatal("the decision changed its snapshot")
	}

	// A batch without losses leaves the store's record alone, and one that
	// changes nothing writes nothing.
	_, ch, err = registry.DecideAnchor(anchorSnap(gen1, anchors), anchorIn(gen1, on("r/same", item(fencegate.AnchorSeed, pr(0, 0, ""), pr(3, 1, "")))))
	if err != nil || !ch.Empty() {
		t.Fatalf("a batch that changes nothing: %+v %v", ch, err)
	}
	// A data set without a lineage gets one: the only meta write.
	snap = anchorSnap(gen1, nil)
	snap.Meta.Lineage = ""
	resp, ch, err = registry.DecideAnchor(snap, anchorIn(gen1, on("r/x", item(fencegate.AnchorSeed, pr(0, 0, ""), pr(1, 0, "")))))
	if err != nil || ch.Meta == nil || ch.Meta.Lineage != candidateLineage || resp.Lineage != candidateLineage {
		t.Fatalf("anchor on a data set without a lineage: %+v %+v %v", resp, ch.Meta, err)
	}
}

// TestDecideAnchorFullBatch: MaxAnchorBatch items on as many resources are
// decided in one change.
func TestDecideAnchorFullBatch(t *testing.T) {
	var items []fencegate.AnchorItem
	for i := range fencegate.MaxAnchorBatch {
		items = append(items, on(fmt.Sprintf("r/%04d", i), item(fencegate.AnchorBegin, pr(0, 0, ""), pr(1, 0, payA))))
	}
	resp, ch, err := registry.DecideAnchor(anchorSnap(gen1, nil), anchorIn(gen1, items...))
	if err != nil || len(resp.Results) != fencegate.MaxAnchorBatch || len(ch.Anchors) != fencegate.MaxAnchorBatch {
		t.Fatalf("%d results, %d anchors written, %v", len(resp.Results), len(ch.Anchors), err)
	}
	_, _, err = registry.DecideAnchor(anchorSnap(gen1, nil), anchorIn(gen1, append(items, items[0])...))
	if !errors.Is(err, registry.ErrInvalidInput) {
		t.Fatalf("a batch over MaxAnchorBatch: %v", err)
	}
}

func ledgerIn(shape, kind string, d time.Duration) registry.LedgerInput {
	return registry.LedgerInput{Store: store, Caller: caller, Event: fencegate.LedgerBody{Shape: shape, Kind: kind, Detail: "d"}, Lineage: candidateLineage, Now: t0.Add(d)}
}

func TestDecideLedger(t *testing.T) {
	const shape = "PUT /v1/items/{}"
	snap := storeSnap(gen1)
	v, ch, err := registry.DecideLedger(snap, ledgerIn(shape, fencegate.LedgerEnforce, 0))
	if err != nil || ch.Ledger == nil || len(v.Ledger) != 1 || v.Ledger[0].EnforcedSince != t0.UnixMilli() || len(v.Ledger[0].History) != 1 {
		t.Fatalf("enforce: %+v %+v %v", v.Ledger, ch, err)
	}
	if ch.Meta != nil || ch.Store != nil || len(ch.Anchors) != 0 {
		t.Fatalf("a ledger event wrote %+v", ch)
	}
	snap.Ledger = v.Ledger
	// Enforce again: nothing changes (replicas record it once).
	if v2, ch, err := registry.DecideLedger(snap, ledgerIn(shape, fencegate.LedgerEnforce, time.Second)); err != nil || !ch.Empty() || !reflect.DeepEqual(v2.Ledger, v.Ledger) {
		t.Fatalf("enforce again: %+v %+v %v", v2.Ledger, ch, err)
	}
	// Downgrade of a shape never enforced: nothing to record.
	if _, ch, err := registry.DecideLedger(snap, ledgerIn("PUT /other", fencegate.LedgerForcedDowngrade, 0)); err != nil || !ch.Empty() {
		t.Fatalf("downgrade of a shape not enforced: %+v %v", ch, err)
	}
	// Downgrade clears EnforcedSince and keeps the history.
	v3, ch, err := registry.DecideLedger(snap, ledgerIn(shape, fencegate.LedgerForcedDowngrade, 2*time.Second))
	if err != nil || ch.Ledger == nil || v3.Ledger[0].EnforcedSince != 0 || len(v3.Ledger[0].History) != 2 || v3.Ledger[0].History[1].Kind != fencegate.LedgerForcedDowngrade {
		t.Fatalf("downgrade: %+v %v", v3.Ledger, err)
	}
	if v.Ledger[0].EnforcedSince == 0 || len(v.Ledger[0].History) != 1 {
		t.Fatal("the decision changed its snapshot's ledger")
	}
	// History is bounded: alternate until over the bound.
	snap.Ledger = nil
	for i := range 2*fencegate.MaxLedgerHistory + 3 {
		kind := fencegate.LedgerEnforce
		if i%2 == 1 {
			kind = fencegate.LedgerForcedDowngrade
		}
		v, _, err := registry.DecideLedger(snap, ledgerIn(shape, kind, time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		snap.Ledger = v.Ledger
	}
	h := snap.Ledger[0].History
	if len(h) != fencegate.MaxLedgerHistory || h[len(h)-1].At != t0.UnixMilli()+2*fencegate.MaxLedgerHistory+2 {
		t.Fatalf("history of %d events ending %+v, want the newest %d", len(h), h[len(h)-1], fencegate.MaxLedgerHistory)
	}
	// Shapes are kept in order and bounded.
	snap.Ledger = nil
	for i := range fencegate.MaxLedgerShapes {
		v, _, err := registry.DecideLedger(snap, ledgerIn(fmt.Sprintf("PUT /s/%03d", fencegate.MaxLedgerShapes-i), fencegate.LedgerEnforce, 0))
		if err != nil {
			t.Fatal(err)
		}
		snap.Ledger = v.Ledger
	}
	for i := 1; i < len(snap.Ledger); i++ {
		if snap.Ledger[i-1].Shape >= snap.Ledger[i].Shape {
			t.Fatalf("ledger out of shape order at %d", i)
		}
	}
	if _, ch, err := registry.DecideLedger(snap, ledgerIn("PUT /one/more", fencegate.LedgerEnforce, 0)); !errors.Is(err, registry.ErrInvalidInput) || !ch.Empty() {
		t.Fatalf("a shape over the bound: %+v %v", ch, err)
	}
	if _, _, err := registry.DecideLedger(snap, ledgerIn("PUT /s/001", fencegate.LedgerForcedDowngrade, 0)); err != nil {
		t.Fatalf("a full ledger still records events of its shapes: %v", err)
	}
	// Refusals write nothing.
	for name, c := range map[string]struct {
		snap registry.StoreSnapshot
		in   registry.LedgerInput
		err  error
	}{
		"not registered": {storeSnap(""), ledgerIn(shape, fencegate.LedgerEnforce, 0), registry.ErrNotFound},
		"unknown kind":   {storeSnap(gen1), ledgerIn(shape, "SHADOW", 0), registry.ErrInvalidInput},
		"no shape":       {storeSnap(gen1), ledgerIn("", fencegate.LedgerEnforce, 0), registry.ErrInvalidInput},
		"denied": {func() registry.StoreSnapshot {
			s := storeSnap(gen1)
			s.Policy = fencegate.Policy{Pattern: "fencegate-store/*", AllowedOwners: []string{"x"}}
			return s
		}(), ledgerIn(shape, fencegate.LedgerEnforce, 0), registry.ErrPolicyDenied},
	} {
		if _, ch, err := registry.DecideLedger(c.snap, c.in); !errors.Is(err, c.err) || !ch.Empty() {
			t.Errorf("%s: %+v %v, want %v and no change", name, ch, err, c.err)
		}
	}
}

func TestDecideAcknowledge(t *testing.T) {
	ack := func(gen string) registry.AcknowledgeInput {
		return registry.AcknowledgeInput{Store: store, Generation: gen, Lineage: candidateLineage, Now: t0}
	}
	snap := storeSnap(gen1)
	snap.Store.Presented = gen2
	snap.Ledger = []fencegate.LedgerEntry{{Shape: "PUT /x", EnforcedSince: 5}}
	res, ch, err := registry.DecideAcknowledge(snap, ack(gen2))
	if err != nil || !res.Adopted || res.Previous != gen1 || ch.Store == nil {
		t.Fatalf("acknowledge: %+v %+v %v", res, ch, err)
	}
	if r := ch.Store; r.Generation != gen2 || r.Acknowledged != 1 || r.AcknowledgedAt != t0.UnixMilli() || r.Presented != "" || r.RegisteredAt != snap.Store.RegisteredAt {
		t.Fatalf("acknowledged record %+v", r)
	}
	if len(ch.Anchors) != 0 || ch.Ledger != nil || ch.Meta != nil || len(res.View.Ledger) != 1 {
		t.Fatalf("an acknowledgement touched more than the record: %+v, view %+v", ch, res.View)
	}
	// Another generation than the presented one is refused, nothing
	// changed: adopting it would refuse every anchor step of the store.
	var np *registry.NotPresentedError
	_, ch, err = registry.DecideAcknowledge(snap, ack("gen-3"))
	if !errors.As(err, &np) || !errors.Is(err, registry.ErrNotPresented) || !ch.Empty() ||
		np.Generation != "gen-3" || np.Anchored != gen1 || np.Presented != gen2 || np.Store != store {
		t.Fatalf("acknowledge a generation not presented: %+v %v", ch, err)
	}
	// The anchored generation: a retry, nothing written.
	res, ch, err = registry.DecideAcknowledge(snap, ack(gen1))
	if err != nil || res.Adopted || !ch.Empty() {
		t.Fatalf("acknowledge the anchored generation: %+v %+v %v", res, ch, err)
	}
	for name, c := range map[string]struct {
		snap registry.StoreSnapshot
		in   registry.AcknowledgeInput
		err  error
	}{
		"never registered": {storeSnap(""), ack(gen2), registry.ErrNotFound},
		"no loss reported": {storeSnap(gen1), ack(gen2), registry.ErrNotPresented},
		"no generation":    {storeSnap(gen1), ack(""), registry.ErrInvalidInput},
		"bad store":        {storeSnap(gen1), func() registry.AcknowledgeInput { in := ack(gen2); in.Store = ".."; return in }(), registry.ErrInvalidInput},
	} {
		if _, ch, err := registry.DecideAcknowledge(c.snap, c.in); !errors.Is(err, c.err) || !ch.Empty() {
			t.Errorf("%s: %+v %v, want %v and no change", name, ch, err, c.err)
		}
	}
}

func TestDecideAnchors(t *testing.T) {
	var rows []fencegate.ResourceAnchor
	for i := range 5 {
		rows = append(rows, fencegate.ResourceAnchor{Resource: fmt.Sprintf("r/%d", i), Anchored: pr(uint64(i+1), 0, "")})
	}
	q := registry.AnchorsQuery{Store: store, Caller: caller, Limit: 3}
	page, err := registry.DecideAnchors(registry.AnchorsSnapshot{StoreSnapshot: storeSnap(gen1), Rows: rows[:4]}, q)
	if err != nil || len(page.Anchors) != 3 || page.Next != "r/2" || page.Lineage != lineage {
		t.Fatalf("a full page: %+v %v", page, err)
	}
	q.After = "r/2"
	page, err = registry.DecideAnchors(registry.AnchorsSnapshot{StoreSnapshot: storeSnap(gen1), Rows: rows[3:]}, q)
	if err != nil || len(page.Anchors) != 2 || page.Next != "" {
		t.Fatalf("the last page: %+v %v", page, err)
	}
	page, err = registry.DecideAnchors(registry.AnchorsSnapshot{StoreSnapshot: storeSnap("")}, registry.AnchorsQuery{Store: store, Caller: caller})
	if err != nil || page.Anchors == nil || len(page.Anchors) != 0 || page.Next != "" {
		t.Fatalf("no anchors: %+v %v", page, err)
	}
	for name, q := range map[string]registry.AnchorsQuery{
		"negative limit":   {Store: store, Caller: caller, Limit: -1},
		"limit over max":   {Store: store, Caller: caller, Limit: fencegate.MaxAnchorPage + 1},
		"malformed after":  {Store: store, Caller: caller, After: "a//b"},
		"malformed store":  {Store: "", Caller: caller},
		"malformed caller": {Store: store, Caller: ""},
	} {
		if _, err := registry.DecideAnchors(registry.AnchorsSnapshot{StoreSnapshot: storeSnap(gen1)}, q); !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := registry.DecideAnchors(registry.AnchorsSnapshot{StoreSnapshot: storeSnap(gen1), Rows: []fencegate.ResourceAnchor{rows[2], rows[1]}},
		registry.AnchorsQuery{Store: store, Caller: caller}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("rows out of order: %v", err)
	}
}
