package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// runCompactAtCommit checks the retention a Commit keeps itself
// (CommitInput.KeepReceipts).
func runCompactAtCommit(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"CommitTrimsBeyondKeepReceipts", func(f *fixture) {
			// Each Commit with KeepReceipts 3 deletes what takes the
			// resource over 3, in its own transaction: no compaction runs.
			for seq := uint64(1); seq <= 6; seq++ {
				in := Attempt(res, 5, seq, "p"+strconv.FormatUint(seq, 10))
				f.expect(in, store.DecisionProceed)
				c := Answer(in.Ref())
				c.KeepReceipts = 3
				if _, err := f.s.Commit(f.ctx, c); err != nil {
					f.Fatalf("Commit seq %d: %v", seq, err)
				}
				if st := f.stats(); st.Receipts != int(min(seq, 3)) {
					f.Fatalf("after seq %d: %d receipts stored, want %d", seq, st.Receipts, min(seq, 3))
				}
			}
			f.receiptsGone(res, 5, 1, 3)
			f.receiptsKept(res, 5, 4, 6)
			f.expect(Attempt(res, 5, 6, "p6"), store.DecisionReplay)
			f.expect(Attempt(res, 5, 2, "p2"), store.DecisionSegmentGap)
			// Another resource's receipts are not counted or touched.
			f.acceptN("other/r", 1, 2)
			f.receiptsKept("other/r", 1, 1, 2)
			r := f.compact(store.CompactInput{Now: T0.Add(time.Hour), MaxPerResource: 3, MaxDeletes: 100})
			f.check(r == store.CompactResult{}, "compaction after trimming commits: %+v, want nothing", r)
		}},
		{"CommitTrimsABacklogInSteps", func(f *fixture) {
			// A resource far over the bound (receipts stored before
			// trimming, or a bound just lowered) loses at most
			// store.MaxTrimPerCommit per Commit.
			n := store.MaxTrimPerCommit + 10
			f.acceptN(res, 5, n)
			in := Attempt(res, 5, uint64(n+1), "last")
			f.expect(in, store.DecisionProceed)
			c := Answer(in.Ref())
			c.KeepReceipts = 1
			if _, err := f.s.Commit(f.ctx, c); err != nil {
				f.Fatalf("Commit: %v", err)
			}
			f.receiptsGone(res, 5, 1, uint64(store.MaxTrimPerCommit))
			f.receiptsKept(res, 5, uint64(store.MaxTrimPerCommit)+1, uint64(n+1))
			if st := f.stats(); st.Receipts != n+1-store.MaxTrimPerCommit {
				f.Fatalf("%d receipts stored, want %d", st.Receipts, n+1-store.MaxTrimPerCommit)
			}
		}},
		{"NegativeKeepReceiptsRefused", func(f *fixture) {
			in := Attempt(res, 5, 1, "p1")
			f.expect(in, store.DecisionProceed)
			c := Answer(in.Ref())
			c.KeepReceipts = -1
			_, err := f.s.Commit(f.ctx, c)
			f.wantErr(err, store.ErrInvalidInput)
			f.commit(in.Ref())
		}},
	})
}

// runCompact checks Compact (retention of receipts and quarantine entries)
// and Stats.
func runCompact(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"EmptyStore", func(f *fixture) {
			r := f.compact(store.CompactInput{Now: T0, MaxAge: time.Nanosecond, MaxPerResource: 1, MaxDeletes: 10})
			f.check(r == store.CompactResult{}, "result %+v", r)
			st := f.stats()
			f.check(st.Resources == 0 && st.Receipts == 0 && st.Quarantined == 0, "stats %+v", st)
		}},
		{"CountKeepsNewest", func(f *fixture) {
			f.acceptN(res, 5, 10)
			before := f.record(res)
			r := f.compact(store.CompactInput{Now: T0.Add(time.Hour), MaxPerResource: 3, MaxDeletes: 100})
			f.check(r == store.CompactResult{Receipts: 7}, "result %+v, want 7 receipts", r)
			f.receiptsGone(res, 5, 1, 7)
			f.receiptsKept(res, 5, 8, 10)
			f.unchanged(res, before)
			r = f.compact(store.CompactInput{Now: T0.Add(time.Hour), MaxPerResource: 3, MaxDeletes: 100})
			f.check(r == store.CompactResult{}, "second call: %+v, want nothing", r)
		}},
		{"AgeDeletesOlderThanMaxAge", func(f *fixture) {
			// Segment i is accepted at T0 + i hours.
			for seq := uint64(1); seq <= 6; seq++ {
				f.acceptAt(Attempt(res, 5, seq, "p"+strconv.FormatUint(seq, 10)), T0.Add(time.Duration(seq)*time.Hour))
			}
			before := f.record(res)
			// Cutoff T0+4h: segments accepted before it go; 4 (at the
			// cutoff exactly) stays.
			r := f.compact(store.CompactInput{Now: T0.Add(10 * time.Hour), MaxAge: 6 * time.Hour, MaxDeletes: 100})
			f.check(r == store.CompactResult{Receipts: 3}, "result %+v, want 3 receipts", r)
			f.receiptsGone(res, 5, 1, 3)
			f.receiptsKept(res, 5, 4, 6)
			f.unchanged(res, before)
		}},
		{"LastSegmentKept", func(f *fixture) {
			f.acceptN(res, 5, 3)
			before := f.record(res)
			for _, in := range []store.CompactInput{
				{Now: T0.Add(1000 * time.Hour), MaxAge: time.Nanosecond, MaxDeletes: 100},
				{Now: T0, MaxPerResource: 1, MaxDeletes: 100},
			} {
				f.compact(in)
				f.receiptsGone(res, 5, 1, 2)
				f.receiptsKept(res, 5, 3, 3)
				f.unchanged(res, before)
			}
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionReplay)
			f.accept(Attempt(res, 5, 4, "p4"))
		}},
		{"InFlightAndUnknownKept", func(f *fixture) {
			aggressive := store.CompactInput{Now: T0.Add(1000 * time.Hour), MaxAge: time.Nanosecond, MaxPerResource: 1, MaxDeletes: 100}
			f.acceptN(res, 5, 3)
			in := Attempt(res, 5, 4, "p4")
			f.expect(in, store.DecisionProceed)
			before := f.record(res)
			r := f.compact(aggressive)
			f.check(r == store.CompactResult{Receipts: 2}, "result %+v, want 2 receipts", r)
			f.unchanged(res, before)
			f.receiptsKept(res, 5, 3, 3)
			f.commit(in.Ref())
			r = f.compact(aggressive)
			f.check(r == store.CompactResult{Receipts: 1}, "after commit: %+v, want 1 receipt", r)
			f.receiptsKept(res, 5, 4, 4)

			in = Attempt(res, 5, 5, "p5")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			before = f.record(res)
			f.check(before.Unknown(), "record %s", dump(before))
			r = f.compact(aggressive)
			f.check(r == store.CompactResult{}, "with an unknown mutation: %+v, want nothing", r)
			f.unchanged(res, before)
			f.receiptsKept(res, 5, 4, 4)
			out, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Applied: true, BackendStatus: 200,
				Response: store.StoredResponse{Status: 200}, Now: T0.Add(time.Hour)})
			f.check(err == nil && out.Record.LastSeq == 5, "Resolve after compaction: %+v, %v", out, err)
		}},
		{"PauseKept", func(f *fixture) {
			f.acceptN(res, 5, 3)
			if _, err := f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseOperator, Detail: "hold", Now: T0}); err != nil {
				f.Fatal(err)
			}
			before := f.record(res)
			f.compact(store.CompactInput{Now: T0, MaxPerResource: 1, MaxDeletes: 100})
			f.unchanged(res, before)
			f.receiptsKept(res, 5, 3, 3)
			f.expect(Attempt(res, 5, 4, "p4"), store.DecisionPaused)
		}},
		{"ReplayOfCompactedSegmentNeverProceeds", func(f *fixture) {
			f.acceptN(res, 5, 5)
			f.acceptN(res, 7, 4)
			// Before compaction, every segment replays.
			for seq := uint64(1); seq <= 5; seq++ {
				f.expect(Attempt(res, 5, seq, "p"+strconv.FormatUint(seq, 10)), store.DecisionReplay)
			}
			before := f.record(res)
			r := f.compact(store.CompactInput{Now: T0, MaxPerResource: 1, MaxDeletes: 100})
			f.check(r == store.CompactResult{Receipts: 8}, "result %+v, want 8 receipts", r)
			f.receiptsGone(res, 5, 1, 5)
			f.receiptsGone(res, 7, 1, 3)
			for _, payload := range []string{"p", "other"} {
				for seq := uint64(1); seq <= 5; seq++ {
					p := payload + strconv.FormatUint(seq, 10)
					f.expect(Attempt(res, 5, seq, p), store.DecisionStaleOwner)
				}
				for seq := uint64(1); seq <= 3; seq++ {
					p := payload + strconv.FormatUint(seq, 10)
					f.expect(Attempt(res, 7, seq, p), store.DecisionSegmentGap)
				}
			}
			f.unchanged(res, before)
			qs, err := f.s.ListQuarantined(f.ctx, res)
			f.check(err == nil && len(qs) == 0, "quarantine %+v, %v", qs, err)
			f.expect(Attempt(res, 7, 4, "p4"), store.DecisionReplay)
			f.accept(Attempt(res, 7, 5, "p5"))
		}},
		{"MaxDeletesBoundsACall", func(f *fixture) {
			for i := range 3 {
				f.acceptN(res+strconv.Itoa(i), 5, 10)
			}
			in := store.CompactInput{Now: T0, MaxPerResource: 2, MaxDeletes: 10}
			var got []store.CompactResult
			for range 4 {
				got = append(got, f.compact(in))
			}
			want := []store.CompactResult{{Receipts: 10, More: true}, {Receipts: 10, More: true}, {Receipts: 4}, {}}
			f.check(reflect.DeepEqual(got, want), "results %+v, want %+v", got, want)
			for i := range 3 {
				f.receiptsGone(res+strconv.Itoa(i), 5, 1, 8)
				f.receiptsKept(res+strconv.Itoa(i), 5, 9, 10)
			}
			st := f.stats()
			f.check(st.Resources == 3 && st.Receipts == 6, "stats %+v", st)
		}},
		{"MoreOnlyWhenMoreIsLeft", func(f *fixture) {
			f.acceptN(res, 5, 10)
			r := f.compact(store.CompactInput{Now: T0, MaxPerResource: 2, MaxDeletes: 8})
			f.check(r == store.CompactResult{Receipts: 8}, "result %+v, want 8 receipts and no more", r)
		}},
		{"Quarantine", func(f *fixture) {
			f.accept(Attempt(res, 5, 1, "p1"))
			for i := 1; i <= 4; i++ {
				in := Attempt(res, 5, 1, "x"+strconv.Itoa(i))
				in.Now = T0.Add(time.Duration(i) * time.Hour)
				in.Deadline = in.Now.Add(time.Minute)
				in.QuietAt = in.Deadline.Add(time.Minute)
				f.expect(in, store.DecisionSegmentConflict)
			}
			before := f.record(res)
			f.check(f.stats().Quarantined == 4, "stats %+v", f.stats())
			r := f.compact(store.CompactInput{Now: T0.Add(5 * time.Hour), MaxPerResource: 2, MaxDeletes: 100})
			f.check(r == store.CompactResult{Quarantine: 2}, "by count: %+v, want 2 quarantine entries", r)
			f.check(reflect.DeepEqual(f.quarantined(res), []string{"x3", "x4"}), "kept %q", f.quarantined(res))
			r = f.compact(store.CompactInput{Now: T0.Add(4*time.Hour + 30*time.Minute), MaxAge: time.Hour, MaxDeletes: 100})
			f.check(r == store.CompactResult{Quarantine: 1}, "by age: %+v, want 1 quarantine entry", r)
			f.check(reflect.DeepEqual(f.quarantined(res), []string{"x4"}), "kept %q", f.quarantined(res))
			f.receiptsKept(res, 5, 1, 1)
			f.unchanged(res, before)
			// A conflict seen again after its entry was compacted is
			// quarantined afresh.
			f.expect(Attempt(res, 5, 1, "x1"), store.DecisionSegmentConflict)
			f.check(reflect.DeepEqual(f.quarantined(res), []string{"x1", "x4"}), "kept %q", f.quarantined(res))
		}},
		{"LedgerUntouched", func(f *fixture) {
			f.enforce(shape, store.EnforcementEnforce, "", T0)
			f.acceptN(res, 5, 3)
			before := f.ledger()
			f.compact(store.CompactInput{Now: T0.Add(1000 * time.Hour), MaxAge: time.Nanosecond, MaxPerResource: 1, MaxDeletes: 100})
			f.check(reflect.DeepEqual(f.ledger(), before), "ledger changed: %+v", f.ledger())
		}},
		{"Stats", func(f *fixture) {
			f.acceptN("a", 5, 3)
			f.acceptN("b", 5, 3)
			f.expect(Attempt("a", 5, 1, "x"), store.DecisionSegmentConflict)
			st := f.stats()
			f.check(st.Resources == 2 && st.Receipts == 6 && st.Quarantined == 1 && st.Bytes > 0, "stats %+v", st)
			f.compact(store.CompactInput{Now: T0, MaxPerResource: 1, MaxDeletes: 100})
			st = f.stats()
			f.check(st.Resources == 2 && st.Receipts == 2 && st.Quarantined == 1 && st.Bytes > 0, "after compaction: %+v", st)
		}},
		{"BadInputDeletesNothing", func(f *fixture) {
			f.acceptN(res, 5, 3)
			f.expect(Attempt(res, 5, 1, "x"), store.DecisionSegmentConflict)
			ok := store.CompactInput{Now: T0.Add(time.Hour), MaxAge: time.Nanosecond, MaxPerResource: 1, MaxDeletes: 100}
			bad := map[string]func(*store.CompactInput){
				"zero now":              func(in *store.CompactInput) { in.Now = time.Time{} },
				"negative max age":      func(in *store.CompactInput) { in.MaxAge = -time.Second },
				"negative per resource": func(in *store.CompactInput) { in.MaxPerResource = -1 },
				"no limit":              func(in *store.CompactInput) { in.MaxAge, in.MaxPerResource = 0, 0 },
				"max deletes 0":         func(in *store.CompactInput) { in.MaxDeletes = 0 },
				"max deletes negative":  func(in *store.CompactInput) { in.MaxDeletes = -5 },
				"max deletes too many":  func(in *store.CompactInput) { in.MaxDeletes = store.MaxCompactDeletes + 1 },
			}
			for name, mutate := range bad {
				in := ok
				mutate(&in)
				r, err := f.s.Compact(f.ctx, in)
				if !isInputError(err) || r != (store.CompactResult{}) {
					f.Errorf("%s: %+v, %v; want an *store.InputError", name, r, err)
				}
			}
			f.receiptsKept(res, 5, 1, 3)
			st := f.stats()
			f.check(st.Receipts == 3 && st.Quarantined == 1, "stats %+v", st)
		}},
		{"CompactDuringTraffic", func(f *fixture) {
			const resources, perResource = 8, 40
			ctx, cancel := context.WithCancel(f.ctx)
			var wg sync.WaitGroup
			var compactErr error
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, err := f.s.Compact(f.ctx, store.CompactInput{Now: T0, MaxPerResource: 2, MaxDeletes: 7}); err != nil {
						compactErr = err
						return
					}
					clock.Sleep(clock.Real(), time.Millisecond, nil) // pacing only: leave the CPU to the writers
				}
			})
			BeginCommitLoop(f, f.s, "busy-", resources, resources*perResource)
			cancel()
			wg.Wait()
			f.check(compactErr == nil, "Compact: %v", compactErr)
			for {
				if r := f.compact(store.CompactInput{Now: T0, MaxPerResource: 2, MaxDeletes: 7}); !r.More {
					break
				}
			}
			for i := range resources {
				r := "busy-" + strconv.Itoa(i)
				rec := f.record(r)
				f.check(rec.HighestFence == 1 && rec.LastSeq == perResource && rec.InFlight == nil, "record %s", dump(rec))
				f.receiptsGone(r, 1, 1, perResource-2)
				f.receiptsKept(r, 1, perResource-1, perResource)
			}
			st := f.stats()
			f.check(st.Receipts == 2*resources, "stats %+v", st)
		}},
	})
}

// runCompactReopen checks that a compaction survives a reopen.
func runCompactReopen(t *testing.T, newStore Factory, reopen Reopener) {
	f := newFixture(t, newStore(t))
	f.acceptN(res, 5, 10)
	f.compact(store.CompactInput{Now: T0, MaxPerResource: 2, MaxDeletes: 100})
	before := f.record(res)
	f.s = reopen(t, f.s)
	f.unchanged(res, before)
	f.receiptsGone(res, 5, 1, 8)
	f.receiptsKept(res, 5, 9, 10)
	st := f.stats()
	f.check(st.Resources == 1 && st.Receipts == 2, "stats after reopen %+v", st)
	f.expect(Attempt(res, 5, 3, "p3"), store.DecisionSegmentGap)
	f.accept(Attempt(res, 5, 11, "p11"))
}

func (f *fixture) compact(in store.CompactInput) store.CompactResult {
	f.Helper()
	r, err := f.s.Compact(f.ctx, in)
	if err != nil {
		f.Fatalf("Compact(%+v): %v", in, err)
	}
	return r
}

func (f *fixture) stats() store.Stats {
	f.Helper()
	st, err := f.s.Stats(f.ctx)
	if err != nil {
		f.Fatalf("Stats: %v", err)
	}
	return st
}

// acceptAt accepts in with a commit at now.
func (f *fixture) acceptAt(in store.BeginInput, now time.Time) store.Receipt {
	f.Helper()
	in.Now = now.Add(-time.Second)
	in.Deadline = now.Add(time.Minute)
	in.QuietAt = in.Deadline.Add(time.Minute)
	f.expect(in, store.DecisionProceed)
	ans := Answer(in.Ref())
	ans.Now = now
	r, err := f.s.Commit(f.ctx, ans)
	if err != nil {
		f.Fatalf("Commit(%s): %v", in.Ref().OperationID(), err)
	}
	return r
}

// receiptsGone checks that segments from..to of fence (root Root(fence))
// have neither a receipt nor an operation-ID index entry.
func (f *fixture) receiptsGone(resource string, fence, from, to uint64) {
	f.Helper()
	for seq := from; seq <= to; seq++ {
		k := store.ReceiptKey{Resource: resource, Fence: fence, Seq: seq}
		if r, err := f.s.Receipt(f.ctx, k); !errors.Is(err, store.ErrNotFound) {
			f.Fatalf("Receipt(%v) = %+v, %v; want ErrNotFound", k, r.ID, err)
		}
		op := fencegate.OperationID(Root(fence), seq)
		if rs, err := f.s.ReceiptsByOperation(f.ctx, resource, op); !errors.Is(err, store.ErrNotFound) {
			f.Fatalf("ReceiptsByOperation(%q, %s) = %d receipts, %v; want ErrNotFound", resource, op, len(rs), err)
		}
	}
}

// receiptsKept checks that segments from..to of fence have their receipt,
// also found by operation ID.
func (f *fixture) receiptsKept(resource string, fence, from, to uint64) {
	f.Helper()
	for seq := from; seq <= to; seq++ {
		k := store.ReceiptKey{Resource: resource, Fence: fence, Seq: seq}
		r, err := f.s.Receipt(f.ctx, k)
		if err != nil {
			f.Fatalf("Receipt(%v): %v", k, err)
		}
		rs, err := f.s.ReceiptsByOperation(f.ctx, resource, r.OperationID)
		if err != nil || len(rs) != 1 || !reflect.DeepEqual(rs[0], r) {
			f.Fatalf("ReceiptsByOperation(%q, %s) = %+v, %v", resource, r.OperationID, rs, err)
		}
	}
}

// quarantined returns the payloads of res's quarantine entries, sorted, as
// the names the fixtures digest ("x1" for Digest("x1")).
func (f *fixture) quarantined(resource string) []string {
	f.Helper()
	qs, err := f.s.ListQuarantined(f.ctx, resource)
	if err != nil {
		f.Fatalf("ListQuarantined(%q): %v", resource, err)
	}
	names := map[string]string{}
	for i := range 10 {
		names[Digest("x"+strconv.Itoa(i))] = "x" + strconv.Itoa(i)
	}
	out := []string{}
	for _, q := range qs {
		out = append(out, names[q.PayloadDigest])
	}
	slices.Sort(out)
	return out
}
