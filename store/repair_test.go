package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// anchored is the Progress a store holding rec's fence at lastSeq, with
// segment pending (0: none) of payload p in flight, reports.
func anchored(fence, lastSeq, pending uint64, p string) fencegate.Progress {
	a := fencegate.Progress{Fence: fence, Root: storetest.Root(fence), Lineage: "l2", Lease: "lease-anchored",
		GrantDigest: storetest.Digest("grant-anchored"), IssuerEpoch: 2, BackendRevision: 10 * fence, LastSeq: lastSeq}
	if pending > 0 {
		a.Pending = &fencegate.PendingOp{Seq: pending, PayloadDigest: storetest.Digest(p), Owner: storetest.Owner(fence)}
	}
	return a
}

func repairIn(a fencegate.Progress) store.RepairInput {
	return store.RepairInput{Resource: "r", Anchored: a, Detail: "registry anchor", Now: storetest.T0, Window: 35 * time.Second}
}

func marker(fence, seq uint64, p string, state store.MutationState) *store.Mutation {
	in := storetest.Attempt("r", fence, seq, p)
	return &store.Mutation{OpRef: in.Ref(), OperationID: in.Ref().OperationID(), PayloadDigest: in.PayloadDigest, GrantDigest: in.GrantDigest,
		Lease: in.Lease, Owner: in.Owner, Evidence: in.Evidence, BegunAt: storetest.T0.Add(-time.Hour), Deadline: storetest.T0.Add(-time.Minute),
		Attempts: 1, State: state}
}

func TestProgressOf(t *testing.T) {
	if p := store.ProgressOf(store.Record{}); p != (fencegate.Progress{}) {
		t.Fatalf("zero record: %+v", p)
	}
	if p := store.ProgressOf(store.Record{Resource: "r", Pause: &store.Pause{Reason: store.PauseOperator}}); p != (fencegate.Progress{Paused: "OPERATOR"}) {
		t.Fatalf("pause only: %+v", p)
	}
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), Lease: "lease-5", GrantDigest: storetest.Digest("g"),
		Evidence: store.Evidence{IssuerEpoch: 3, BackendRevision: 50, Lineage: "l2"}, LastSeq: 2,
		InFlight: marker(5, 3, "p3", store.MutationUnknown), Pause: &store.Pause{Reason: store.PauseFenceRegression}}
	want := fencegate.Progress{Fence: 5, Root: storetest.Root(5), Lineage: "l2", Lease: "lease-5", GrantDigest: storetest.Digest("g"),
		IssuerEpoch: 3, BackendRevision: 50, LastSeq: 2,
		Pending: &fencegate.PendingOp{Seq: 3, PayloadDigest: storetest.Digest("p3"), Owner: storetest.Owner(5), Attempts: 1}, Paused: "FENCE_REGRESSION"}
	if p := store.ProgressOf(rec); !reflect.DeepEqual(p, want) {
		t.Fatalf("ProgressOf\n got %+v\nwant %+v", p, want)
	}
	// In flight or unknown, the marker is pending: it may have reached the backend.
	rec.InFlight.State = store.MutationInFlight
	if p := store.ProgressOf(rec); p.Pending == nil || p.Pending.Seq != 3 {
		t.Fatalf("in flight: %+v", p.Pending)
	}
	if err := store.ProgressOf(rec).Validate(); err != nil {
		t.Fatal(err)
	}
}

// The rules of DecideRepair, case by case.
func TestDecideRepair(t *testing.T) {
	base := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), Lease: "lease-5", GrantDigest: storetest.Digest("grant-5"),
		Evidence: store.Evidence{IssuerEpoch: 1, BackendRevision: 50, Lineage: "l1"}, AcceptedAt: storetest.T0.Add(-time.Hour), LastSeq: 2}
	with := func(f func(*store.Record)) store.Record { r := base.Clone(); f(&r); return r }
	window := 35 * time.Second
	unknown := func(a fencegate.Progress) *store.Mutation {
		ref := store.OpRef{Resource: "r", Fence: a.Fence, Root: a.Root, Seq: a.Pending.Seq}
		return &store.Mutation{OpRef: ref, OperationID: ref.OperationID(), PayloadDigest: a.Pending.PayloadDigest, GrantDigest: a.GrantDigest,
			Lease: a.Lease, Owner: a.Pending.Owner, Evidence: store.Evidence{IssuerEpoch: a.IssuerEpoch, BackendRevision: a.BackendRevision, Lineage: a.Lineage},
			BegunAt: storetest.T0, Deadline: storetest.T0.Add(window), QuietAt: storetest.T0.Add(window), Attempts: 1, State: store.MutationUnknown, Cause: store.CauseStoreLoss,
			UnknownSince: storetest.T0}
	}
	// adopted is base raised to a (fence, grant, segment, pending).
	adopted := func(r store.Record, a fencegate.Progress, prior []store.PriorLineage) store.Record {
		r.HighestFence, r.Root, r.Lease, r.GrantDigest = a.Fence, a.Root, a.Lease, a.GrantDigest
		r.Evidence = store.Evidence{IssuerEpoch: a.IssuerEpoch, BackendRevision: a.BackendRevision, Lineage: a.Lineage}
		r.AcceptedAt, r.LastSeq, r.InFlight, r.PriorLineages = storetest.T0, a.LastSeq, nil, prior
		if a.Pending != nil {
			r.InFlight = unknown(a)
		}
		return r
	}
	higherPending := anchored(7, 0, 1, "x")
	samePending := anchored(5, 2, 3, "p3")
	retried := anchored(5, 2, 3, "p3")
	retried.Pending.Attempts = 2
	otherRoot := anchored(5, 1, 2, "y")
	otherRoot.Root = "other-root"
	for _, c := range []struct {
		name   string
		rec    store.Record
		a      fencegate.Progress
		want   store.Record // without its pause
		detail []string     // in the pause detail
	}{
		{"no record, higher fence with pending", store.Record{}, higherPending,
			adopted(store.Record{Resource: "r"}, higherPending, nil), []string{"raised to the anchored 7"}},
		{"higher fence drops a lower marker", with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationInFlight) }), higherPending,
			adopted(base, higherPending, []store.PriorLineage{{Lineage: "l1", Fence: 5}}), []string{"highest fence 5 raised to the anchored 7"}},
		{"higher fence, nothing pending", base, anchored(6, 4, 0, ""), adopted(base, anchored(6, 4, 0, ""), []store.PriorLineage{{Lineage: "l1", Fence: 5}}), nil},
		{"same fence, later segment", with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationUnknown) }), anchored(5, 4, 0, ""),
			with(func(r *store.Record) { r.LastSeq = 4 }), []string{"last segment 2 raised to the anchored 4"}},
		{"same fence, earlier segment keeps the record's", with(func(r *store.Record) { r.LastSeq = 6 }), anchored(5, 4, 0, ""),
			with(func(r *store.Record) { r.LastSeq = 6 }), nil},
		{"same fence, pending lost", base, samePending,
			with(func(r *store.Record) { r.InFlight = unknown(samePending) }), []string{"root-5/3 put back as UNKNOWN"}},
		{"same fence, pending replaced", with(func(r *store.Record) { r.InFlight = marker(5, 3, "other", store.MutationInFlight) }), samePending,
			with(func(r *store.Record) { r.InFlight = unknown(samePending) }), []string{"root-5/3 put back as UNKNOWN"}},
		{"same fence, pending still held", with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationUnknown) }), samePending,
			with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationUnknown) }), nil},
		{"same fence, pending held in flight becomes unknown", with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationInFlight) }), samePending,
			with(func(r *store.Record) {
				r.InFlight = marker(5, 3, "p3", store.MutationUnknown)
				r.InFlight.Cause, r.InFlight.UnknownSince = store.CauseStoreLoss, storetest.T0
			}), []string{"root-5/3 marked UNKNOWN"}},
		{"same fence, a later attempt's Begin lost", with(func(r *store.Record) { r.InFlight = marker(5, 3, "p3", store.MutationUnknown) }), retried,
			with(func(r *store.Record) {
				r.InFlight = marker(5, 3, "p3", store.MutationUnknown)
				r.InFlight.Attempts, r.InFlight.Cause, r.InFlight.UnknownSince = 2, store.CauseStoreLoss, storetest.T0
			}), []string{"root-5/3 marked UNKNOWN"}},
		{"same fence, pending committed", with(func(r *store.Record) { r.LastSeq = 3 }), samePending,
			with(func(r *store.Record) { r.LastSeq = 3 }), nil},
		{"same fence, pending after a lost commit", with(func(r *store.Record) { r.LastSeq = 0; r.InFlight = marker(5, 1, "p1", store.MutationUnknown) }),
			samePending, with(func(r *store.Record) { r.InFlight = unknown(samePending) }), []string{"last segment 0 raised to the anchored 2", "put back"}},
		{"same fence, another root", with(func(r *store.Record) { r.LastSeq = 4; r.InFlight = marker(5, 5, "z", store.MutationInFlight) }), otherRoot,
			adopted(base, otherRoot, nil), []string{"fence 5 issued twice", storetest.Root(5), "other-root"}},
		{"lower fence anchored", base, anchored(4, 9, 10, "q"), base, nil},
		{"nothing anchored", base, fencegate.Progress{}, base, nil},
	} {
		ch, err := store.DecideRepair(c.rec, repairIn(c.a))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := ch.Record
		p := got.Pause
		if !ch.WriteRecord || ch.WriteReceipt || ch.Quarantine != nil || p == nil || p.Reason != store.PauseStoreLoss || !p.At.Equal(storetest.T0) ||
			p.Fence != c.a.Fence || !strings.HasPrefix(p.Detail, "registry anchor") {
			t.Errorf("%s: change %+v, pause %+v", c.name, ch, p)
			continue
		}
		for _, d := range c.detail {
			if !strings.Contains(p.Detail, d) {
				t.Errorf("%s: detail %q lacks %q", c.name, p.Detail, d)
			}
		}
		got.Pause = nil
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, dumpRec(got), dumpRec(c.want))
		}
		if !store.ProgressOf(ch.Record).Covers(c.a) {
			t.Errorf("%s: result does not cover the anchor", c.name)
		}
	}
}

// A pause already there is replaced by STORE_LOSS with its evidence in the
// detail; a repeated repair writes nothing.
func TestDecideRepairPause(t *testing.T) {
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), LastSeq: 2,
		Pause: &store.Pause{Reason: store.PauseFenceRegression, Detail: "fence 4 below highest 5 with later evidence", At: storetest.T0.Add(-time.Hour),
			Fence: 4, Evidence: store.Evidence{IssuerEpoch: 7, BackendRevision: 70}}}
	ch, err := store.DecideRepair(rec, repairIn(anchored(5, 3, 0, "")))
	if err != nil {
		t.Fatal(err)
	}
	p := ch.Record.Pause
	if p.Reason != store.PauseStoreLoss || !strings.Contains(p.Detail, "earlier pause FENCE_REGRESSION (fence 4, epoch 7, revision 70): fence 4 below") {
		t.Fatalf("pause %+v", p)
	}
	again, err := store.DecideRepair(ch.Record, repairIn(anchored(5, 3, 0, "")))
	if err != nil || again.Writes() || !reflect.DeepEqual(again.Record, ch.Record) {
		t.Fatalf("repeated repair: %+v, %v", again, err)
	}
	// Begin answers PAUSED, whose code is FENCE_REGRESSION.
	res, _, err := store.Decide(ch.Record, nil, storetest.Attempt("r", 5, 4, "p4"))
	if err != nil || res.Decision != store.DecisionPaused || res.Code() != fencegate.CodeFenceRegression || !strings.Contains(res.Detail, "STORE_LOSS") {
		t.Fatalf("Begin after repair: %s %s %q, %v", res.Decision, res.Code(), res.Detail, err)
	}
	// The detail stays bounded.
	long := rec.Clone()
	long.Pause.Detail = strings.Repeat("é", store.MaxDetailLen/2)
	in := repairIn(anchored(5, 3, 0, ""))
	in.Detail = strings.Repeat("d", store.MaxDetailLen)
	ch, err = store.DecideRepair(long, in)
	if err != nil || len(ch.Record.Pause.Detail) > store.MaxDetailLen {
		t.Fatalf("detail of %d bytes, %v", len(ch.Record.Pause.Detail), err)
	}
}

func TestDecideRepairRefuses(t *testing.T) {
	good := repairIn(anchored(5, 2, 3, "p3"))
	for name, f := range map[string]func(*store.RepairInput){
		"resource":       func(in *store.RepairInput) { in.Resource = "" },
		"no root":        func(in *store.RepairInput) { in.Anchored.Root = "" },
		"bad root":       func(in *store.RepairInput) { in.Anchored.Root = "a\x7fb" },
		"lineage":        func(in *store.RepairInput) { in.Anchored.Lineage = "L2" },
		"grant digest":   func(in *store.RepairInput) { in.Anchored.GrantDigest = "sha256:zz" },
		"pending seq":    func(in *store.RepairInput) { in.Anchored.Pending.Seq = 5 },
		"pending digest": func(in *store.RepairInput) { in.Anchored.Pending.PayloadDigest = "x" },
		"pending past MaxSeq": func(in *store.RepairInput) {
			in.Anchored.LastSeq, in.Anchored.Pending.Seq = fencegate.MaxSeq, fencegate.MaxSeq+1
		},
		"fields, fence 0": func(in *store.RepairInput) { in.Anchored.Fence = 0 },
		"detail":          func(in *store.RepairInput) { in.Detail = "a\nb" },
		"now":             func(in *store.RepairInput) { in.Now = time.Time{} },
		"window":          func(in *store.RepairInput) { in.Window = -time.Second },
		"long window":     func(in *store.RepairInput) { in.Window = store.MaxInFlightWindow + 1 },
	} {
		in := good
		a := *good.Anchored.Pending
		in.Anchored.Pending = &a
		f(&in)
		_, err := store.DecideRepair(store.Record{}, in)
		var ie *store.InputError
		if !errors.As(err, &ie) || !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := store.DecideRepair(store.Record{Resource: "other"}, good); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("record of another resource: %v", err)
	}
}

// Properties, over records reachable by Decide and any anchor: the result
// covers the anchor, never lowers the highest fence, never lowers the last
// segment under the same fence and root, keeps the marker's invariant,
// forgets no marker of its highest fence that the anchor does not show
// settled, is paused for STORE_LOSS, and a repeat writes nothing. The
// inputs are not modified.
func TestDecideRepairProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := genRecord(t)
		orig := rec.Clone()
		in := repairIn(genProgress(t, rec))
		in.Window = time.Duration(rapid.IntRange(0, 120).Draw(t, "window")) * time.Second
		ch, err := store.DecideRepair(rec, in)
		if err != nil {
			t.Fatalf("DecideRepair(%s, %+v): %v", dumpRec(rec), in.Anchored, err)
		}
		next := ch.Record
		if !reflect.DeepEqual(rec, orig) {
			t.Fatal("input record modified")
		}
		if !store.ProgressOf(next).Covers(in.Anchored) {
			t.Fatalf("%s does not cover %+v", dumpRec(next), in.Anchored)
		}
		if next.HighestFence < rec.HighestFence {
			t.Fatalf("highest fence lowered: %d -> %d", rec.HighestFence, next.HighestFence)
		}
		if next.HighestFence == rec.HighestFence && next.Root == rec.Root && next.LastSeq < rec.LastSeq {
			t.Fatalf("last segment lowered: %d -> %d", rec.LastSeq, next.LastSeq)
		}
		if m := next.InFlight; m != nil && (m.Fence != next.HighestFence || m.Root != next.Root || m.Seq != next.LastSeq+1) {
			t.Fatalf("marker %+v inconsistent with %s", m, dumpRec(next))
		}
		if m := rec.InFlight; m != nil && m.Fence == next.HighestFence && m.Root == next.Root && m.Seq > next.LastSeq && next.InFlight == nil {
			t.Fatalf("marker %s forgotten", m.OperationID)
		}
		if p := in.Anchored.Pending; p != nil && next.HighestFence == in.Anchored.Fence && next.Root == in.Anchored.Root && next.LastSeq < p.Seq &&
			!next.Unknown() {
			t.Fatalf("anchored pending %d left %+v, not UNKNOWN", p.Seq, next.InFlight)
		}
		if next.Pause == nil || next.Pause.Reason != store.PauseStoreLoss || !ch.WriteRecord {
			t.Fatalf("not paused for STORE_LOSS: %+v", ch)
		}
		if err := (store.PauseInput{Resource: "r", Reason: store.PauseOperator, Detail: next.Pause.Detail, Now: storetest.T0}).Validate(); err != nil {
			t.Fatalf("pause detail: %v", err)
		}
		again, err := store.DecideRepair(next, in)
		if err != nil || again.Writes() {
			t.Fatalf("repeat: %+v, %v", again, err)
		}
		res, _, err := store.Decide(next, nil, storetest.Attempt("r", next.HighestFence+1, 1, "z"))
		if err != nil || res.Code() != fencegate.CodeFenceRegression {
			t.Fatalf("Begin after repair: %s %s, %v", res.Decision, res.Code(), err)
		}
	})
}

// genRecord draws a record as Decide, Commit, MarkUnknown and Pause leave
// it: a fence's first Begin, some committed segments, maybe a marker in
// flight or unknown (by no answer or deadline), maybe a pause.
func genRecord(t *rapid.T) store.Record {
	if rapid.IntRange(0, 9).Draw(t, "noRecord") == 0 {
		return store.Record{}
	}
	now := storetest.T0.Add(-time.Hour)
	var rec store.Record
	apply := func(ch store.Change, err error) {
		if err != nil {
			t.Fatalf("generator: %v", err)
		}
		if ch.WriteRecord {
			rec = ch.Record
		}
	}
	fence := rapid.Uint64Range(1, 6).Draw(t, "fence")
	attempt := func(seq uint64) store.BeginInput {
		in := storetest.Attempt("r", fence, seq, rapid.SampledFrom([]string{"a", "b"}).Draw(t, "payload"))
		in.Evidence.Lineage = rapid.SampledFrom([]string{"", "l1", "l2"}).Draw(t, "lineage")
		in.Now, in.Deadline = now, now.Add(time.Minute)
		return in
	}
	if rapid.Bool().Draw(t, "earlierFence") && fence > 1 {
		in := attempt(1)
		in.Fence, in.Root = fence-1, storetest.Root(fence-1)
		_, ch, err := store.Decide(rec, nil, in)
		apply(ch, err)
		apply(store.DecideCommit(rec, nil, storetest.Answer(in.Ref()), 0))
	}
	committed := rapid.Uint64Range(0, 4).Draw(t, "committed")
	for seq := uint64(1); seq <= committed; seq++ {
		in := attempt(seq)
		_, ch, err := store.Decide(rec, nil, in)
		apply(ch, err)
		apply(store.DecideCommit(rec, nil, storetest.Answer(in.Ref()), 0))
	}
	nextSeq := uint64(1)
	if rec.HighestFence == fence {
		nextSeq = rec.LastSeq + 1
	}
	switch rapid.IntRange(0, 3).Draw(t, "marker") {
	case 1: // in flight
		_, ch, err := store.Decide(rec, nil, attempt(nextSeq))
		apply(ch, err)
	case 2: // unknown
		in := attempt(nextSeq)
		_, ch, err := store.Decide(rec, nil, in)
		apply(ch, err)
		apply(store.DecideMarkUnknown(rec, store.MarkUnknownInput{OpRef: in.Ref(), Now: now}))
	case 3: // past its deadline, found by a later Begin
		_, ch, err := store.Decide(rec, nil, attempt(nextSeq))
		apply(ch, err)
		later := attempt(1)
		later.Fence, later.Root = fence+1, storetest.Root(fence+1)
		later.Now, later.Deadline = now.Add(time.Hour), now.Add(time.Hour+time.Minute)
		_, ch, err = store.Decide(rec, nil, later)
		apply(ch, err)
	}
	if rapid.IntRange(0, 3).Draw(t, "paused") == 0 {
		apply(store.DecidePause(rec, store.PauseInput{Resource: "r", Reason: store.PauseOperator, Detail: "gen", Now: now}))
	}
	return rec
}

// genProgress draws a valid anchored Progress near rec's fence: below,
// at (under its root or another), above, or nothing.
func genProgress(t *rapid.T, rec store.Record) fencegate.Progress {
	fence := rec.HighestFence + rapid.Uint64Range(0, 2).Draw(t, "anchoredFence")
	if fence > 0 && rapid.IntRange(0, 3).Draw(t, "anchoredBelow") == 0 {
		fence--
	}
	if fence == 0 {
		return fencegate.Progress{}
	}
	a := anchored(fence, rapid.Uint64Range(0, 5).Draw(t, "anchoredLastSeq"), 0, "")
	if rapid.IntRange(0, 4).Draw(t, "anchoredOtherRoot") == 0 {
		a.Root = "other-root"
	}
	a.Lineage = rapid.SampledFrom([]string{"", "l1", "l2", "l3"}).Draw(t, "anchoredLineage")
	if rapid.Bool().Draw(t, "anchoredPending") {
		a.Pending = &fencegate.PendingOp{Seq: a.LastSeq + 1, PayloadDigest: storetest.Digest(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "anchoredPayload"))}
	}
	if rapid.IntRange(0, 3).Draw(t, "anchoredPaused") == 0 {
		a.Paused = "OPERATOR"
	}
	return a
}

func dumpRec(r store.Record) string {
	s := r.Resource + " fence " + u(r.HighestFence) + " root " + r.Root + " lastSeq " + u(r.LastSeq) + " lineage " + r.Evidence.Lineage +
		" prior " + fmt.Sprint(r.PriorLineages)
	if m := r.InFlight; m != nil {
		s += " marker " + m.OperationID + " " + string(m.State) + " " + string(m.Cause) + " payload " + m.PayloadDigest
	}
	if p := r.Pause; p != nil {
		s += " pause " + string(p.Reason)
	}
	return s
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// A Begin that found the loss and raised the fence above the anchor over
// an anchored pending mutation (story 3: the store forgot A's UNKNOWN,
// B's Begin with a higher fence proceeded on the empty record) is
// withdrawn: the record goes back to what the Begin read and is raised to
// the anchor, A's mutation UNKNOWN again, so B cannot overtake it.
func TestDecideRepairWithdraw(t *testing.T) {
	a := anchored(1, 0, 1, "a1") // A's segment 1 of fence 1 may be in flight
	beginB := func(before store.Record) (store.BeginResult, store.Withdrawal) {
		res, _, err := store.Decide(before, nil, storetest.Attempt("r", 2, 1, "b1"))
		if err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("Begin of B: %s, %v", res.Decision, err)
		}
		return res, store.Withdrawal{Mutation: res.Mutation.Ref(), Before: res.Prior}
	}
	in := repairIn(a)
	res, w := beginB(store.Record{}) // the store lost everything
	in.Withdraw = &w
	ch, err := store.DecideRepair(res.Record, in)
	if err != nil {
		t.Fatal(err)
	}
	got := ch.Record
	if got.HighestFence != 1 || got.Root != a.Root || got.InFlight == nil || got.InFlight.OperationID != fencegate.OperationID(a.Root, 1) ||
		!got.Unknown() || got.InFlight.Cause != store.CauseStoreLoss || got.Pause == nil || got.Pause.Reason != store.PauseStoreLoss ||
		!strings.Contains(got.Pause.Detail, "withdrawn") {
		t.Fatalf("withdrawn repair: %s, pause %+v", dumpRec(got), got.Pause)
	}
	if !store.ProgressOf(got).Covers(a) {
		t.Fatal("result does not cover the anchor")
	}
	// B is refused until A is settled and the resource resumed.
	if again, _, _ := store.Decide(got, nil, storetest.Attempt("r", 2, 1, "b1")); again.Decision == store.DecisionProceed {
		t.Fatal("B proceeds after the repair")
	}

	// Not withdrawn: nothing pending at the anchor, a Before above the
	// anchor's fence, a marker that is not the Begin's, no Withdraw.
	for name, f := range map[string]func(in *store.RepairInput, rec *store.Record){
		"nothing pending": func(in *store.RepairInput, _ *store.Record) { in.Anchored = anchored(1, 1, 0, "") },
		"before at the Begin's fence": func(in *store.RepairInput, _ *store.Record) {
			in.Withdraw.Before = store.Record{Resource: "r", HighestFence: 2, Root: storetest.Root(2)}
		},
		"another marker": func(in *store.RepairInput, _ *store.Record) { in.Withdraw.Mutation.Seq = 2 },
		"retried marker": func(_ *store.RepairInput, rec *store.Record) { rec.InFlight.Attempts = 2 },
		"no withdraw":    func(in *store.RepairInput, _ *store.Record) { in.Withdraw = nil },
	} {
		res, w := beginB(store.Record{})
		in := repairIn(a)
		in.Withdraw = &w
		rec := res.Record.Clone()
		f(&in, &rec)
		ch, err := store.DecideRepair(rec, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ch.Record.HighestFence != 2 {
			t.Errorf("%s: highest fence %d, want the Begin's 2 kept", name, ch.Record.HighestFence)
		}
	}
	bad := repairIn(a)
	bad.Withdraw = &store.Withdrawal{Mutation: store.OpRef{Resource: "other", Fence: 2, Root: storetest.Root(2), Seq: 1}}
	if _, err := store.DecideRepair(store.Record{}, bad); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("withdrawal of another resource: %v", err)
	}
}
