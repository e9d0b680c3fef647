package storetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
)

// runLifecycle checks Commit, MarkUnknown, Resolve, Abort, Pause/Resume and
// the lookups.
func runLifecycle(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"CommitWritesReceiptAdvancesAndClears", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			ans := Answer(in.Ref())
			rc, err := f.s.Commit(f.ctx, ans)
			if err != nil {
				f.Fatal(err)
			}
			want := store.Receipt{
				ID:            store.ReceiptID(in.Ref(), in.PayloadDigest),
				OpRef:         in.Ref(),
				OperationID:   "root-5/1",
				PayloadDigest: in.PayloadDigest,
				GrantDigest:   in.GrantDigest,
				Owner:         in.Owner,
				BackendStatus: 201,
				Response:      store.StoredResponse{Status: 201, Header: ans.Response.Header, Body: ans.Response.Body},
				AcceptedAt:    ans.Now,
				Source:        store.SourceCommit,
			}
			f.check(reflect.DeepEqual(rc, want), "receipt\n got %+v\nwant %+v", rc, want)
			rec := f.record(res)
			f.check(rec.LastSeq == 1 && rec.InFlight == nil && rec.HighestFence == 5, "record %s", dump(rec))
			got, err := f.s.Receipt(f.ctx, rc.Key())
			f.check(err == nil && reflect.DeepEqual(got, want), "Receipt: %+v, %v", got, err)
			byOp, err := f.s.ReceiptsByOperation(f.ctx, res, "root-5/1")
			f.check(err == nil && len(byOp) == 1 && reflect.DeepEqual(byOp[0], want), "ReceiptsByOperation: %+v, %v", byOp, err)
		}},
		{"HigherFenceRecordsTheOneItSuperseded", func(f *fixture) {
			// The store's own proof that fence 2's segments committed, kept
			// when fence 3 takes over (store/anchor reads it once
			// compaction deleted their receipts).
			f.acceptN(res, 2, 3)
			f.check(f.record(res).Superseded == (store.Superseded{}), "superseded before a second fence: %+v", f.record(res).Superseded)
			f.accept(Attempt(res, 3, 1, "q"))
			want := store.Superseded{Fence: 2, Root: Root(2), LastSeq: 3}
			f.check(f.record(res).Superseded == want, "superseded %+v, want %+v", f.record(res).Superseded, want)
			f.accept(Attempt(res, 3, 2, "q2"))
			f.check(f.record(res).Superseded == want, "superseded after fence 3's next segment %+v, want %+v", f.record(res).Superseded, want)
		}},
		{"CommitIsIdempotent", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			rc := f.accept(in)
			again, err := f.s.Commit(f.ctx, Answer(in.Ref()))
			f.check(err == nil && reflect.DeepEqual(again, rc), "second commit: %+v, %v", again, err)
			f.check(f.record(res).LastSeq == 1, "lastSeq moved")
		}},
		{"CommitWithoutMatchingMutation", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			_, err := f.s.Commit(f.ctx, Answer(in.Ref()))
			f.wantErr(err, store.ErrNotInFlight)
			f.noRecord(res)
			f.expect(in, store.DecisionProceed)
			before := f.record(res)
			for _, ref := range []store.OpRef{
				Attempt(res, 5, 2, "a").Ref(),
				Attempt(res, 6, 1, "a").Ref(),
				{Resource: res, Fence: 5, Root: "other", Seq: 1},
				Attempt("elsewhere", 5, 1, "a").Ref(),
			} {
				_, err := f.s.Commit(f.ctx, Answer(ref))
				f.wantErr(err, store.ErrNotInFlight)
			}
			f.unchanged(res, before)
		}},
		{"CommitTruncatesLongBody", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			ans := Answer(in.Ref())
			ans.Response.Body = bytes.Repeat([]byte("x"), store.MaxResponseBodyLimit+1)
			rc, err := f.s.Commit(f.ctx, ans)
			f.check(err == nil && rc.Response.Truncated && len(rc.Response.Body) <= store.MaxResponseBodyLimit && len(rc.Response.Body) > 0,
				"receipt body %d bytes truncated=%v, %v", len(rc.Response.Body), rc.Response.Truncated, err)
			got, err := f.s.Receipt(f.ctx, rc.Key())
			f.check(err == nil && reflect.DeepEqual(got, rc), "stored %d bytes, %v", len(got.Response.Body), err)
		}},
		{"CommitLateAnswerOfUnknown", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			rc := f.commit(in.Ref())
			f.check(rc.Source == store.SourceCommit, "receipt %+v", rc)
			rec := f.record(res)
			f.check(rec.InFlight == nil && rec.LastSeq == 1, "record %s", dump(rec))
		}},
		{"MarkUnknownListsAndIsIdempotent", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			us, err := f.s.ListUnknown(f.ctx, T0)
			f.check(err == nil && len(us) == 0, "unknown before: %+v, %v", us, err)
			_, err = f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: Attempt(res, 5, 2, "a").Ref(), Now: T0})
			f.wantErr(err, store.ErrNotInFlight)
			m1, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0})
			if err != nil {
				f.Fatal(err)
			}
			m2, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0.Add(time.Hour)})
			f.check(err == nil && reflect.DeepEqual(m1, m2), "second mark: %+v vs %+v, %v", m2, m1, err)
			us, err = f.s.ListUnknown(f.ctx, T0)
			f.check(err == nil && len(us) == 1 && reflect.DeepEqual(us[0], m1), "unknown: %+v, %v", us, err)
		}},
		{"ListUnknownIncludesExpired", func(f *fixture) {
			a := Attempt("r-a", 5, 1, "a")
			b := Attempt("r-b", 5, 1, "b")
			b.Deadline = T0.Add(time.Hour)
			f.expect(a, store.DecisionProceed)
			f.expect(b, store.DecisionProceed)
			us, err := f.s.ListUnknown(f.ctx, a.Deadline)
			f.check(err == nil && len(us) == 1 && us[0].Resource == "r-a" && us[0].State == store.MutationInFlight, "unknown: %+v, %v", us, err)
			us, err = f.s.ListUnknown(f.ctx, b.Deadline)
			f.check(err == nil && len(us) == 2 && us[0].Resource == "r-a" && us[1].Resource == "r-b", "unknown: %+v, %v", us, err)
		}},
		{"ResolveApplied", func(f *fixture) {
			f.acceptN(res, 5, 1)
			in := Attempt(res, 5, 2, "p2")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			rin := store.ResolveInput{OpRef: in.Ref(), Applied: true, Response: store.StoredResponse{Status: 200, Body: []byte("ok")}, Now: T0.Add(time.Hour)}
			rr, err := f.s.Resolve(f.ctx, rin)
			if err != nil {
				f.Fatal(err)
			}
			rc := rr.Receipt
			f.check(rr.Applied && rc != nil && rc.Source == store.SourceReconciled && rc.BackendStatus == 0 && rc.Response.Status == 200 &&
				rc.PayloadDigest == in.PayloadDigest && rc.ID == store.ReceiptID(in.Ref(), in.PayloadDigest) && rc.AcceptedAt.Equal(rin.Now), "receipt %+v", rc)
			f.check(rr.Record.LastSeq == 2 && rr.Record.InFlight == nil && reflect.DeepEqual(rr.Record, f.record(res)), "record %s", dump(rr.Record))
			us, err := f.s.ListUnknown(f.ctx, rin.Now)
			f.check(err == nil && len(us) == 0, "unknown after resolve: %+v, %v", us, err)
			// Recovery looks the receipt up by operation ID; a replay returns it.
			byOp, err := f.s.ReceiptsByOperation(f.ctx, res, in.Ref().OperationID())
			f.check(err == nil && len(byOp) == 1 && byOp[0].ID == rc.ID, "by op: %+v, %v", byOp, err)
			r := f.expect(in, store.DecisionReplay)
			f.check(r.Receipt.ID == rc.ID, "replay %+v", r.Receipt)
			// Idempotent as applied; contradicted as not applied.
			again, err := f.s.Resolve(f.ctx, rin)
			f.check(err == nil && reflect.DeepEqual(again.Receipt, rc), "again: %+v, %v", again, err)
			_, err = f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: rin.Now})
			f.wantErr(err, store.ErrConflict)
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionProceed)
		}},
		{"ResolveNotApplied", func(f *fixture) {
			f.acceptN(res, 5, 1)
			in := Attempt(res, 5, 2, "p2")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			// At its quiet time: no attempt can take effect any more.
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: in.QuietAt})
			f.check(err == nil && !rr.Applied && rr.Receipt == nil && rr.Record.LastSeq == 1 && rr.Record.InFlight == nil && rr.Record.HighestFence == 5,
				"resolve: %+v, %v", rr, err)
			_, err = f.s.Receipt(f.ctx, store.ReceiptKey{Resource: res, Fence: 5, Seq: 2})
			f.wantErr(err, store.ErrNotFound)
			_, err = f.s.ReceiptsByOperation(f.ctx, res, "root-5/2")
			f.wantErr(err, store.ErrNotFound)
			// A new fence may commit a new operation now.
			f.accept(Attempt(res, 6, 1, "new"))
			_, err = f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: T0})
			f.wantErr(err, store.ErrNotInFlight)
		}},
		{"ResolveRefusesLiveMutation", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			before := f.record(res)
			_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: T0})
			f.wantErr(err, store.ErrStillInFlight)
			_, err = f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Applied: true, BackendStatus: 200, Now: T0})
			f.wantErr(err, store.ErrStillInFlight)
			f.unchanged(res, before)
			// Past its deadline it counts as unknown and may be resolved;
			// as not applied only once it is quiet too.
			_, err = f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: in.Deadline})
			f.wantErr(err, store.ErrNotQuiet)
			f.unchanged(res, before)
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: in.QuietAt})
			f.check(err == nil && rr.Record.InFlight == nil && rr.Record.HighestFence == 5 && rr.Record.LastSeq == 0, "resolve: %+v, %v", rr, err)
		}},
		{"AbortRules", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			_, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: T0})
			f.wantErr(err, store.ErrNotInFlight)
			f.expect(in, store.DecisionProceed)
			_, err = f.s.Abort(f.ctx, store.AbortInput{OpRef: Attempt(res, 5, 2, "a").Ref(), Now: T0})
			f.wantErr(err, store.ErrNotInFlight)
			// Declared unknown: Abort is refused.
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			before := f.record(res)
			_, err = f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: T0})
			f.wantErr(err, store.ErrOutcomeUnknown)
			f.unchanged(res, before)
			// A retry that was never sent goes back to unknown, not away.
			retry := in
			retry.RetryUnknown = true
			f.expect(retry, store.DecisionProceed)
			rec, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: T0})
			f.check(err == nil && rec.Unknown() && rec.InFlight.Attempts == 2, "abort of retry: %s, %v", dump(rec), err)
			f.expect(Attempt(res, 6, 1, "x"), store.DecisionMutationUnknown)
		}},
		{"AbortAfterDeadlineMarkedUnknown", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			late := Attempt(res, 6, 1, "x")
			late.Now = in.Deadline
			late.Deadline = late.Now.Add(time.Minute)
			f.expect(late, store.DecisionMutationUnknown)
			// The owner proves it never sent the request: that settles it.
			rec, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: late.Now})
			f.check(err == nil && rec.InFlight == nil && rec.HighestFence == 5, "abort: %s, %v", dump(rec), err)
			f.expect(late, store.DecisionProceed)
		}},
		{"PauseResume", func(f *fixture) {
			_, err := f.s.Resume(f.ctx, res)
			f.wantErr(err, store.ErrNotFound)
			rec, err := f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseOperator, Detail: "first", Now: T0})
			f.check(err == nil && rec.Pause != nil && rec.HighestFence == 0 && rec.Resource == res, "pause: %s, %v", dump(rec), err)
			rec, err = f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseFenceRegression, Detail: "second", Now: T0.Add(time.Second)})
			f.check(err == nil && rec.Pause.Detail == "first" && rec.Pause.At.Equal(T0), "second pause: %s, %v", dump(rec), err)
			f.expect(Attempt(res, 5, 1, "a"), store.DecisionPaused)
			rec, err = f.s.Resume(f.ctx, res)
			f.check(err == nil && rec.Pause == nil, "resume: %s, %v", dump(rec), err)
			_, err = f.s.Resume(f.ctx, res)
			f.wantErr(err, store.ErrNotPaused)
			f.accept(Attempt(res, 5, 1, "a"))
			// Pause during a mutation: its commit still lands.
			in := Attempt(res, 5, 2, "b")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseOperator, Now: T0}); err != nil {
				f.Fatal(err)
			}
			f.commit(in.Ref())
			rec = f.record(res)
			f.check(rec.LastSeq == 2 && rec.Pause != nil && rec.HighestFence == 5, "record %s", dump(rec))
		}},
		{"ResumeNeverLowersHighest", func(f *fixture) {
			f.acceptN(res, 9, 2)
			in := Attempt(res, 3, 1, "a")
			in.Evidence = store.Evidence{IssuerEpoch: 7}
			f.expect(in, store.DecisionFenceRegression)
			rec, err := f.s.Resume(f.ctx, res)
			f.check(err == nil && rec.HighestFence == 9 && rec.LastSeq == 2 && rec.Root == Root(9), "resume: %s, %v", dump(rec), err)
			// The regressed registry is still refused, and pauses again.
			f.expect(in, store.DecisionFenceRegression)
		}},
		{"Lookups", func(f *fixture) {
			_, err := f.s.Record(f.ctx, res)
			f.wantErr(err, store.ErrNotFound)
			_, err = f.s.Receipt(f.ctx, store.ReceiptKey{Resource: res, Fence: 1, Seq: 1})
			f.wantErr(err, store.ErrNotFound)
			_, err = f.s.ReceiptsByOperation(f.ctx, res, "root-1/1")
			f.wantErr(err, store.ErrNotFound)
			qs, err := f.s.ListQuarantined(f.ctx, "")
			f.check(err == nil && len(qs) == 0, "quarantined: %+v, %v", qs, err)
			ps, err := f.s.ListPaused(f.ctx)
			f.check(err == nil && len(ps) == 0, "paused: %+v, %v", ps, err)
			// Receipts of several resources do not mix.
			a := f.accept(Attempt("a", 5, 1, "x"))
			b := f.accept(Attempt("a/b", 5, 1, "x"))
			f.check(a.ID != b.ID, "receipt IDs collide")
			ra, err := f.s.ReceiptsByOperation(f.ctx, "a", "root-5/1")
			f.check(err == nil && len(ra) == 1 && ra[0].ID == a.ID, "by op: %+v, %v", ra, err)
		}},
		{"ReceiptsByOperationAcrossFences", func(f *fixture) {
			// A root reused under a later fence: both receipts are found.
			first := f.accept(Attempt(res, 5, 1, "a"))
			in := Attempt(res, 7, 1, "b")
			in.Root = Root(5)
			second := f.accept(in)
			rs, err := f.s.ReceiptsByOperation(f.ctx, res, "root-5/1")
			f.check(err == nil && len(rs) == 2 && rs[0].ID == first.ID && rs[1].ID == second.ID, "by op: %+v, %v", rs, err)
		}},
		{"ClosedAndCancelled", func(f *fixture) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := f.s.Begin(ctx, Attempt(res, 5, 1, "a")); !errors.Is(err, context.Canceled) {
				f.Fatalf("Begin with cancelled context: %v", err)
			}
			f.noRecord(res)
			f.accept(Attempt(res, 5, 1, "a"))
			if err := f.s.Close(); err != nil {
				f.Fatal(err)
			}
			_, err := f.s.Begin(f.ctx, Attempt(res, 5, 2, "b"))
			f.wantErr(err, store.ErrClosed)
			_, err = f.s.Record(f.ctx, res)
			f.wantErr(err, store.ErrClosed)
		}},
		{"ReturnedValuesAreCopies", func(f *fixture) {
			rc := f.accept(Attempt(res, 5, 1, "a"))
			rc.Response.Body[0] = 'X'
			rc.Response.Header["Etag"][0] = "mutated"
			got, err := f.s.Receipt(f.ctx, rc.Key())
			f.check(err == nil && !strings.HasPrefix(string(got.Response.Body), "X") && got.Response.Header["Etag"][0] != "mutated",
				"stored receipt changed through a returned value: %+v", got)
		}},
	})
}
