package storetest

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// Progress returns the anchored Progress of fence at lastSeq, with segment
// pending (0: none) of payload p, as the fixtures' Attempt would have
// written it.
func Progress(fence, lastSeq, pending uint64, p string) fencegate.Progress {
	in := Attempt(res, fence, 1, p)
	a := fencegate.Progress{Fence: fence, Root: in.Root, Lease: in.Lease, GrantDigest: in.GrantDigest,
		IssuerEpoch: in.Evidence.IssuerEpoch, BackendRevision: in.Evidence.BackendRevision, LastSeq: lastSeq}
	if pending > 0 {
		a.Pending = &fencegate.PendingOp{Seq: pending, PayloadDigest: Digest(p), Owner: Owner(fence)}
	}
	return a
}

func (f *fixture) repair(a fencegate.Progress, now time.Time) store.Record {
	f.Helper()
	rec, err := f.s.Repair(f.ctx, store.RepairInput{Resource: res, Anchored: a, Detail: "behind its anchor", Now: now, Window: time.Minute})
	if err != nil {
		f.Fatalf("Repair(%+v): %v", a, err)
	}
	f.check(reflect.DeepEqual(rec, f.record(res)), "Repair returned %s, stored %s", dump(rec), dump(f.record(res)))
	f.check(store.ProgressOf(rec).Covers(a), "repaired record %s does not cover %+v", dump(rec), a)
	f.check(rec.Pause != nil && rec.Pause.Reason == store.PauseStoreLoss && strings.HasPrefix(rec.Pause.Detail, "behind its anchor"),
		"pause %+v", rec.Pause)
	return rec
}

// runRepair checks Repair: a store found behind its outside anchor is
// raised to it, never lowered, and paused; what the anchor says may have
// reached the backend comes back as UNKNOWN.
func runRepair(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"EmptyStoreTakesTheAnchor", func(f *fixture) {
			// A Redis that came back empty: fence 7's segment 3 was anchored
			// in flight, so it may have reached the backend.
			a := Progress(7, 2, 3, "p3")
			rec := f.repair(a, T0)
			m := rec.InFlight
			f.check(rec.HighestFence == 7 && rec.Root == Root(7) && rec.LastSeq == 2 && rec.Lease == a.Lease && rec.GrantDigest == a.GrantDigest &&
				m != nil && m.State == store.MutationUnknown && m.Cause == store.CauseStoreLoss && m.Seq == 3 && m.PayloadDigest == Digest("p3") &&
				m.Owner == Owner(7) && m.UnknownSince.Equal(T0) && m.Deadline.Equal(T0.Add(time.Minute)), "record %s", dump(rec))
			// Every Begin is PAUSED, with the code FENCE_REGRESSION; the lower
			// fences are STALE_OWNER once resumed, and the unknown mutation
			// blocks until reconciled.
			r := f.expect(Attempt(res, 8, 1, "x"), store.DecisionPaused)
			f.check(r.Code() == fencegate.CodeFenceRegression && strings.Contains(r.Detail, "STORE_LOSS"), "code %s, detail %q", r.Code(), r.Detail)
			paused, err := f.s.ListPaused(f.ctx)
			f.check(err == nil && len(paused) == 1 && reflect.DeepEqual(paused[0], rec), "paused %+v, %v", paused, err)
			us, err := f.s.ListUnknown(f.ctx, T0)
			f.check(err == nil && len(us) == 1 && us[0].OperationID == Root(7)+"/3" && us[0].Cause == store.CauseStoreLoss, "unknown %+v, %v", us, err)
			if _, err := f.s.Resume(f.ctx, res); err != nil {
				f.Fatal(err)
			}
			f.expect(Attempt(res, 6, 1, "x"), store.DecisionMutationUnknown)
			// Abort is for a request proven never sent: refused.
			_, err = f.s.Abort(f.ctx, store.AbortInput{OpRef: m.Ref(), Now: T0})
			f.wantErr(err, store.ErrOutcomeUnknown)
			// Reconciliation settles it: applied writes its receipt.
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: m.Ref(), Applied: true, Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
			f.check(err == nil && rr.Receipt != nil && rr.Receipt.PayloadDigest == Digest("p3") && rr.Receipt.Owner == Owner(7) &&
				rr.Record.LastSeq == 3 && rr.Record.InFlight == nil, "resolve: %+v, %v", rr, err)
			f.expect(Attempt(res, 6, 1, "x"), store.DecisionStaleOwner)
			f.expect(Attempt(res, 7, 4, "p4"), store.DecisionProceed)
		}},
		{"OlderCopyRaisedAndMarkerDropped", func(f *fixture) {
			// A Redis restored from an older snapshot: fence 5 with a marker;
			// the anchor has fence 6 committed up to 2.
			f.acceptN(res, 5, 2)
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionProceed)
			rec := f.repair(Progress(6, 2, 0, ""), T0)
			f.check(rec.HighestFence == 6 && rec.Root == Root(6) && rec.LastSeq == 2 && rec.InFlight == nil &&
				strings.Contains(rec.Pause.Detail, "raised to the anchored 6"), "record %s", dump(rec))
			us, err := f.s.ListUnknown(f.ctx, T0.Add(time.Hour))
			f.check(err == nil && len(us) == 0, "unknown %+v, %v", us, err)
			// The dropped marker's Commit finds nothing to commit.
			_, err = f.s.Commit(f.ctx, Answer(Attempt(res, 5, 3, "p3").Ref()))
			f.wantErr(err, store.ErrNotInFlight)
		}},
		{"SameFenceSegmentAndPendingRestored", func(f *fixture) {
			// The store lost the commit of segment 2 and the Begin of 3.
			f.acceptN(res, 5, 1)
			rec := f.repair(Progress(5, 2, 3, "p3"), T0)
			f.check(rec.HighestFence == 5 && rec.LastSeq == 2 && rec.InFlight != nil && rec.InFlight.Seq == 3 && rec.InFlight.Cause == store.CauseStoreLoss,
				"record %s", dump(rec))
			// Segment 2 is not sent again: the unknown segment 3 blocks.
			if _, err := f.s.Resume(f.ctx, res); err != nil {
				f.Fatal(err)
			}
			f.expect(Attempt(res, 5, 2, "p2"), store.DecisionMutationUnknown)
		}},
		{"MarkerOfThePendingMutationKept", func(f *fixture) {
			f.acceptN(res, 5, 2)
			in := Attempt(res, 5, 3, "p3")
			f.expect(in, store.DecisionProceed)
			before := f.record(res)
			rec := f.repair(Progress(5, 2, 3, "p3"), T0.Add(time.Second))
			// The same mutation, now UNKNOWN: an earlier attempt of it may
			// have reached the backend, so it can no longer be aborted.
			want := *before.InFlight
			want.State, want.Cause, want.UnknownSince = store.MutationUnknown, store.CauseStoreLoss, T0.Add(time.Second)
			f.check(reflect.DeepEqual(*rec.InFlight, want), "marker %+v, want %+v", rec.InFlight, want)
			_, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: T0})
			f.wantErr(err, store.ErrOutcomeUnknown)
			// Its owner's answer still commits it, under the pause.
			rc := f.commit(in.Ref())
			f.check(rc.PayloadDigest == in.PayloadDigest, "receipt %+v", rc)
			f.check(f.record(res).LastSeq == 3 && f.record(res).Pause != nil, "record %s", dump(f.record(res)))
		}},
		{"AnotherRootTakesTheAnchors", func(f *fixture) {
			f.acceptN(res, 5, 3)
			a := Progress(5, 1, 2, "p2")
			a.Root, a.Lease = "anchored-root", "lease-anchored"
			rec := f.repair(a, T0)
			f.check(rec.Root == "anchored-root" && rec.Lease == "lease-anchored" && rec.LastSeq == 1 && rec.InFlight != nil &&
				rec.InFlight.Root == "anchored-root" && strings.Contains(rec.Pause.Detail, "issued twice"), "record %s", dump(rec))
		}},
		{"HigherRecordOnlyPauses", func(f *fixture) {
			f.acceptN(res, 6, 2)
			before := f.record(res)
			rec := f.repair(Progress(5, 4, 5, "x"), T0)
			rec.Pause = nil
			f.check(reflect.DeepEqual(rec, before), "record %s, want %s", dump(rec), dump(before))
		}},
		{"RepeatChangesNothing", func(f *fixture) {
			f.acceptN(res, 5, 1)
			a := Progress(6, 1, 2, "q")
			first := f.repair(a, T0)
			again := f.repair(a, T0.Add(time.Hour))
			f.check(reflect.DeepEqual(again, first), "repeat changed %s to %s", dump(first), dump(again))
		}},
		{"EarlierPauseKeptInTheDetail", func(f *fixture) {
			f.acceptN(res, 5, 1)
			if _, err := f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseOperator, Detail: "maintenance", Now: T0}); err != nil {
				f.Fatal(err)
			}
			rec := f.repair(Progress(5, 1, 0, ""), T0.Add(time.Minute))
			f.check(strings.Contains(rec.Pause.Detail, "earlier pause OPERATOR: maintenance") && rec.Pause.At.Equal(T0.Add(time.Minute)),
				"pause %+v", rec.Pause)
		}},
		{"BadInputWritesNothing", func(f *fixture) {
			_, err := f.s.Repair(f.ctx, store.RepairInput{Resource: res, Anchored: fencegate.Progress{Fence: 3}, Now: T0})
			wantInputError(f, err)
			f.noRecord(res)
		}},
	})
}

// runRecords checks Records: every record, in resource order, paged.
func runRecords(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"Empty", func(f *fixture) {
			recs, err := f.s.Records(f.ctx, store.RecordsQuery{Limit: 10})
			f.check(err == nil && len(recs) == 0, "records of an empty store %+v, %v", recs, err)
		}},
		{"Pages", func(f *fixture) {
			var names []string
			for i := range 11 {
				r := "rec/" + strconv.Itoa(i) // rec/0, rec/1, rec/10, rec/2, ... in byte order
				names = append(names, r)
				f.accept(Attempt(r, uint64(i+1), 1, "a"))
			}
			// A record that only holds a pause is a record too.
			if _, err := f.s.Pause(f.ctx, store.PauseInput{Resource: "rec/paused", Reason: store.PauseOperator, Now: T0}); err != nil {
				f.Fatal(err)
			}
			names = append(names, "rec/paused")
			want := append([]string(nil), names...)
			slices.Sort(want)
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				f.check(pages < 10, "paging does not end")
				recs, err := f.s.Records(f.ctx, store.RecordsQuery{After: after, Limit: 5})
				if err != nil {
					f.Fatal(err)
				}
				for _, r := range recs {
					f.check(reflect.DeepEqual(r, f.record(r.Resource)), "paged %s, stored %s", dump(r), dump(f.record(r.Resource)))
					got = append(got, r.Resource)
				}
				if len(recs) < 5 {
					break
				}
				after = recs[len(recs)-1].Resource
			}
			f.check(reflect.DeepEqual(got, want), "paged %q, want %q", got, want)
			// After need not name a record.
			recs, err := f.s.Records(f.ctx, store.RecordsQuery{After: "rec/10x", Limit: 1})
			f.check(err == nil && len(recs) == 1 && recs[0].Resource == "rec/2", "after a name between records: %+v, %v", recs, err)
			recs, err = f.s.Records(f.ctx, store.RecordsQuery{After: "rec/zzz", Limit: 3})
			f.check(err == nil && len(recs) == 0, "after the last: %+v, %v", recs, err)
		}},
	})
}

// runGeneration checks Generation: a well-formed ID, the same on every
// call of one data set, another for another store.
func runGeneration(t *testing.T, newStore Factory) {
	a, b := newFixture(t, newStore(t)), newFixture(t, newStore(t))
	g1, err := a.s.Generation(a.ctx)
	a.check(err == nil && store.ValidateGeneration(g1) == nil, "generation %q, %v", g1, err)
	a.accept(Attempt(res, 5, 1, "a"))
	g2, err := a.s.Generation(a.ctx)
	a.check(err == nil && g2 == g1, "generation changed to %q, %v", g2, err)
	other, err := b.s.Generation(b.ctx)
	b.check(err == nil && other != g1, "two stores share generation %q, %v", other, err)
}

// runGenerationReopen checks that a reopen keeps the data set's generation.
func runGenerationReopen(t *testing.T, newStore Factory, reopen Reopener) {
	f := newFixture(t, newStore(t))
	before, err := f.s.Generation(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.s = reopen(t, f.s)
	after, err := f.s.Generation(f.ctx)
	f.check(err == nil && after == before, "generation after reopen %q, want %q (%v)", after, before, err)
}
