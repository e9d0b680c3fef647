package storetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
)

const res = "invoice-batch/2026-07-19"

// runDecisions checks every row of Begin's decision table.
func runDecisions(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"ProceedNewResource", func(f *fixture) {
			in := Attempt(res, 8842, 1, "a")
			in.Evidence = store.Evidence{IssuerEpoch: 37, BackendRevision: 1920184}
			r := f.expect(in, store.DecisionProceed)
			m := r.Mutation
			f.check(m != nil && m.OperationID == Root(8842)+"/1" && m.Fence == 8842 && m.Seq == 1 &&
				m.State == store.MutationInFlight && m.Attempts == 1 && m.PayloadDigest == in.PayloadDigest &&
				m.GrantDigest == in.GrantDigest && m.Lease == in.Lease && m.Owner == in.Owner && m.Evidence == in.Evidence &&
				m.Deadline.Equal(in.Deadline) && m.BegunAt.Equal(in.Now), "mutation %+v", m)
			rec := f.record(res)
			f.check(rec.HighestFence == 8842 && rec.Root == in.Root && rec.LastSeq == 0 && rec.Lease == in.Lease &&
				rec.GrantDigest == in.GrantDigest && rec.Evidence == in.Evidence && rec.AcceptedAt.Equal(in.Now) &&
				rec.InFlight != nil && rec.InFlight.OperationID == m.OperationID && rec.Pause == nil, "record %s", dump(rec))
			f.check(reflect.DeepEqual(r.Record, rec), "result record %s, stored %s", dump(r.Record), dump(rec))
			f.check(!r.Prior.Exists(), "prior of a new resource %s", dump(r.Prior))
		}},
		{"ProceedNextSegment", func(f *fixture) {
			f.acceptN(res, 5, 3)
			rec := f.record(res)
			f.check(rec.HighestFence == 5 && rec.LastSeq == 3 && rec.InFlight == nil, "record %s", dump(rec))
			r := f.expect(Attempt(res, 5, 4, "p4"), store.DecisionProceed)
			// Prior is the record as Begin read it: what an outside anchor
			// checks before the mutation is forwarded.
			f.check(reflect.DeepEqual(r.Prior, rec), "prior %s, want %s", dump(r.Prior), dump(rec))
			f.check(store.ProgressOf(r.Record).Pending != nil && store.ProgressOf(r.Record).Pending.Seq == 4, "progress %+v", store.ProgressOf(r.Record))
		}},
		{"LineageSupersededBelowHighestIsStale", func(f *fixture) {
			// A new coordination client (lineage l2) continued above l1's
			// fences: l1's later grants are merely stale.
			in := Attempt(res, 5, 1, "p1")
			in.Evidence.Lineage = "l1"
			f.accept(in)
			next := Attempt(res, 6, 1, "q1")
			next.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 1, Lineage: "l2"}
			f.accept(next)
			rec := f.record(res)
			f.check(rec.Evidence.Lineage == "l2" && len(rec.PriorLineages) == 1 && rec.PriorLineages[0].Lineage == "l1", "record %s", dump(rec))
			old := Attempt(res, 5, 2, "p2")
			old.Evidence = store.Evidence{IssuerEpoch: 9, BackendRevision: 900, Lineage: "l1"} // not comparable with l2's
			f.expect(old, store.DecisionStaleOwner)
			f.unchanged(res, rec)
		}},
		{"LineageUnseenBelowHighestPauses", func(f *fixture) {
			// A registry that did not continue above the highest fence (an
			// empty data directory): its fence 2 pauses the resource with no
			// receipt to compare, whatever its evidence.
			in := Attempt(res, 6, 1, "p1")
			in.Evidence.Lineage = "l1"
			f.accept(in)
			fresh := Attempt(res, 2, 1, "x")
			fresh.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 1, Lineage: "l9"}
			r := f.expect(fresh, store.DecisionFenceRegression)
			rec := f.record(res)
			p := rec.Pause
			f.check(rec.HighestFence == 6 && rec.LastSeq == 1 && p != nil && p.Reason == store.PauseFenceRegression && p.Fence == 2 &&
				p.Evidence == fresh.Evidence && strings.Contains(p.Detail, "l9") && strings.Contains(p.Detail, "l1") &&
				reflect.DeepEqual(r.Record, rec), "record %s", dump(rec))
			f.check(r.Code() == "FENCE_REGRESSION", "code %s", r.Code())
			if _, err := f.s.Resume(f.ctx, res); err != nil {
				f.Fatal(err)
			}
			f.expect(fresh, store.DecisionFenceRegression)
		}},
		{"LineageUnknownKeepsTodaysRules", func(f *fixture) {
			f.acceptN(res, 6, 1) // a grant without lineage
			in := Attempt(res, 5, 1, "x")
			in.Evidence.Lineage = "l9"
			f.expect(in, store.DecisionStaleOwner)
			in.Evidence.IssuerEpoch = 2
			f.expect(in, store.DecisionFenceRegression)
		}},
		{"ProceedNewFenceAfterCommits", func(f *fixture) {
			f.acceptN(res, 5, 2)
			f.expect(Attempt(res, 9, 1, "x"), store.DecisionProceed)
			rec := f.record(res)
			f.check(rec.HighestFence == 9 && rec.Root == Root(9) && rec.LastSeq == 0, "record %s", dump(rec))
		}},
		{"Replay", func(f *fixture) {
			rc := f.acceptN(res, 5, 2)
			before := f.record(res)
			r := f.expect(Attempt(res, 5, 1, "p1"), store.DecisionReplay)
			f.check(r.Receipt != nil && reflect.DeepEqual(*r.Receipt, rc[0]), "replayed %+v, want %+v", r.Receipt, rc[0])
			f.check(r.Receipt.Response.Status == 201 && string(r.Receipt.Response.Body) == `{"op":"root-5/1"}` &&
				r.Receipt.Response.Header["Etag"][0] == `"root-5/1"`, "response %+v", r.Receipt.Response)
			f.unchanged(res, before)
		}},
		{"ReplayAfterNewerFenceTookOver", func(f *fixture) {
			old := f.acceptN(res, 5, 2)
			f.acceptN(res, 6, 1)
			r := f.expect(Attempt(res, 5, 2, "p2"), store.DecisionReplay)
			f.check(reflect.DeepEqual(*r.Receipt, old[1]), "replayed %+v, want the original %+v", r.Receipt, old[1])
			// An unused later segment of the old owner is stale.
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionStaleOwner)
		}},
		{"SegmentConflictQuarantined", func(f *fixture) {
			rc := f.acceptN(res, 5, 1)[0]
			before := f.record(res)
			in := Attempt(res, 5, 1, "evil")
			r := f.expect(in, store.DecisionSegmentConflict)
			f.check(r.Receipt != nil && r.Receipt.ID == rc.ID, "conflicting receipt %+v", r.Receipt)
			q := r.Quarantine
			f.check(q != nil && q.ID == store.QuarantineID(in.Ref(), in.PayloadDigest) && q.PayloadDigest == in.PayloadDigest &&
				q.AcceptedPayloadDigest == rc.PayloadDigest && q.ReceiptID == rc.ID && q.Attempts == 1 &&
				q.OperationID == "root-5/1" && q.FirstSeen.Equal(T0), "quarantine %+v", q)
			f.unchanged(res, before)
			// Never let through: not again, not as a retry, not after a newer fence.
			in.Now = T0.Add(time.Minute)
			in.Deadline = in.Now.Add(time.Minute)
			in.RetryUnknown = true
			r = f.expect(in, store.DecisionSegmentConflict)
			f.check(r.Quarantine.Attempts == 2 && r.Quarantine.FirstSeen.Equal(T0) && r.Quarantine.LastSeen.Equal(in.Now), "quarantine %+v", r.Quarantine)
			f.acceptN(res, 6, 1)
			f.expect(in, store.DecisionSegmentConflict)
			qs, err := f.s.ListQuarantined(f.ctx, res)
			f.check(err == nil && len(qs) == 1 && qs[0].Attempts == 3 && qs[0].ID == q.ID, "quarantined %+v, %v", qs, err)
			all, err := f.s.ListQuarantined(f.ctx, "")
			f.check(err == nil && len(all) == 1, "all quarantined %+v, %v", all, err)
			got, err := f.s.Receipt(f.ctx, rc.Key())
			f.check(err == nil && reflect.DeepEqual(got, rc), "receipt now %+v, %v", got, err)
		}},
		{"FenceReissuedOverReceiptPauses", func(f *fixture) {
			// A registry restored from an old snapshot issues fence 5 again,
			// under another grant: the accepted segment proves it, whatever
			// the payload, and the resource pauses instead of quarantining.
			rc := f.acceptN(res, 5, 1)[0]
			for _, payload := range []string{"p1", "evil"} {
				in := Attempt(res, 5, 1, payload)
				in.Root = "other-root"
				in.Lease = "lease-reissued"
				r := f.expect(in, store.DecisionFenceRegression)
				f.check(r.Receipt != nil && reflect.DeepEqual(*r.Receipt, rc) && r.Quarantine == nil, "receipt %+v, quarantine %+v", r.Receipt, r.Quarantine)
				rec := f.record(res)
				p := rec.Pause
				f.check(rec.HighestFence == 5 && rec.Root == Root(5) && rec.LastSeq == 1 && rec.InFlight == nil && p != nil &&
					p.Reason == store.PauseFenceRegression && p.Fence == 5 && p.Evidence == in.Evidence && p.At.Equal(T0) &&
					strings.Contains(p.Detail, "other-root") && strings.Contains(p.Detail, Root(5)) && strings.Contains(p.Detail, rc.ID) &&
					r.Detail == p.Detail, "record %s", dump(rec))
				f.check(reflect.DeepEqual(r.Record, rec), "result record %s", dump(r.Record))
				qs, err := f.s.ListQuarantined(f.ctx, res)
				f.check(err == nil && len(qs) == 0, "quarantined %+v, %v", qs, err)
				paused, err := f.s.ListPaused(f.ctx)
				f.check(err == nil && len(paused) == 1 && reflect.DeepEqual(paused[0], rec), "paused %+v, %v", paused, err)
				// Paused: the legitimate owner waits for an operator too.
				f.expect(Attempt(res, 5, 2, "p2"), store.DecisionPaused)
				got, err := f.s.Receipt(f.ctx, rc.Key())
				f.check(err == nil && reflect.DeepEqual(got, rc), "receipt now %+v, %v", got, err)
				// Resume keeps everything: the original replays, the re-issued
				// fence pauses again.
				rec, err = f.s.Resume(f.ctx, res)
				f.check(err == nil && rec.Pause == nil && rec.HighestFence == 5 && rec.LastSeq == 1 && rec.Root == Root(5), "resume: %s, %v", dump(rec), err)
				f.expect(Attempt(res, 5, 1, "p1"), store.DecisionReplay)
			}
		}},
		{"FenceReissuedBelowHighestOverReceiptPauses", func(f *fixture) {
			// The receipt is proof even once a newer fence took over, and
			// even with earlier evidence (which alone would be STALE_OWNER).
			f.acceptN(res, 5, 2)
			f.acceptN(res, 6, 1)
			in := Attempt(res, 5, 2, "p2")
			in.Root = "other-root"
			in.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 1}
			f.expect(in, store.DecisionFenceRegression)
			rec := f.record(res)
			f.check(rec.HighestFence == 6 && rec.Root == Root(6) && rec.LastSeq == 1 && rec.Pause != nil &&
				rec.Pause.Reason == store.PauseFenceRegression && rec.Pause.Fence == 5, "record %s", dump(rec))
			// Without a receipt to compare, a lower fence stays STALE_OWNER.
			if _, err := f.s.Resume(f.ctx, res); err != nil {
				f.Fatal(err)
			}
			in.Seq = 3
			f.expect(in, store.DecisionStaleOwner)
		}},
		{"StaleOwner", func(f *fixture) {
			f.acceptN(res, 6, 1)
			before := f.record(res)
			r := f.expect(Attempt(res, 5, 1, "a"), store.DecisionStaleOwner)
			f.check(r.Record.HighestFence == 6, "result record %s", dump(r.Record))
			f.unchanged(res, before)
		}},
		{"StaleOwnerWhileNewerFenceInFlight", func(f *fixture) {
			// The new fence is the highest from its Begin on.
			f.acceptN(res, 5, 1)
			f.expect(Attempt(res, 6, 1, "a"), store.DecisionProceed)
			f.expect(Attempt(res, 5, 2, "p2"), store.DecisionStaleOwner)
		}},
		{"StaleOwnerSameEpochOlderRevision", func(f *fixture) {
			f.acceptN(res, 6, 1)
			in := Attempt(res, 5, 1, "a")
			in.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 59}
			f.expect(in, store.DecisionStaleOwner)
			in.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 60}
			f.expect(in, store.DecisionStaleOwner)
		}},
		{"FenceRegressionLaterEpochPauses", func(f *fixture) {
			f.acceptN(res, 6, 1)
			in := Attempt(res, 5, 1, "a")
			in.Evidence = store.Evidence{IssuerEpoch: 2, BackendRevision: 1}
			r := f.expect(in, store.DecisionFenceRegression)
			rec := f.record(res)
			f.check(rec.HighestFence == 6 && rec.LastSeq == 1 && rec.Pause != nil && rec.Pause.Reason == store.PauseFenceRegression &&
				rec.Pause.Fence == 5 && rec.Pause.Evidence == in.Evidence && rec.Pause.At.Equal(T0), "record %s", dump(rec))
			f.check(reflect.DeepEqual(r.Record, rec), "result record %s", dump(r.Record))
			// Everything is paused now, even a valid next fence and replays.
			f.expect(Attempt(res, 7, 1, "b"), store.DecisionPaused)
			f.expect(Attempt(res, 6, 1, "p1"), store.DecisionPaused)
			paused, err := f.s.ListPaused(f.ctx)
			f.check(err == nil && len(paused) == 1 && paused[0].Resource == res, "paused %+v, %v", paused, err)
			// Resume keeps the highest fence: the regressed fence stays out.
			rec, err = f.s.Resume(f.ctx, res)
			f.check(err == nil && rec.Pause == nil && rec.HighestFence == 6 && rec.LastSeq == 1, "resume: %s, %v", dump(rec), err)
			f.expect(Attempt(res, 5, 1, "a"), store.DecisionStaleOwner)
			f.expect(Attempt(res, 7, 1, "b"), store.DecisionProceed)
			paused, err = f.s.ListPaused(f.ctx)
			f.check(err == nil && len(paused) == 0, "paused after resume %+v, %v", paused, err)
		}},
		{"FenceRegressionSameEpochLaterRevision", func(f *fixture) {
			f.acceptN(res, 6, 1)
			in := Attempt(res, 5, 1, "a")
			in.Evidence = store.Evidence{IssuerEpoch: 1, BackendRevision: 61}
			f.expect(in, store.DecisionFenceRegression)
			f.expect(Attempt(res, 6, 2, "p2"), store.DecisionPaused)
		}},
		{"SegmentGapNewFenceNotAtOne", func(f *fixture) {
			f.expect(Attempt(res, 5, 2, "a"), store.DecisionSegmentGap)
			f.noRecord(res)
			f.acceptN(res, 6, 2)
			before := f.record(res)
			f.expect(Attempt(res, 7, 3, "a"), store.DecisionSegmentGap)
			f.unchanged(res, before)
		}},
		{"SegmentGapSkippedSeq", func(f *fixture) {
			f.acceptN(res, 5, 1)
			before := f.record(res)
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionSegmentGap)
			f.unchanged(res, before)
			f.expect(Attempt(res, 5, 2, "p2"), store.DecisionProceed)
		}},
		{"FenceReissuedAtHighestPauses", func(f *fixture) {
			f.acceptN(res, 5, 1)
			for _, seq := range []uint64{2, 7} { // the next segment, or any
				in := Attempt(res, 5, seq, "p2")
				in.Root = "other-root"
				in.Lease = "lease-reissued"
				r := f.expect(in, store.DecisionFenceRegression)
				rec := f.record(res)
				p := rec.Pause
				f.check(rec.HighestFence == 5 && rec.Root == Root(5) && rec.Lease == "lease-5" && rec.LastSeq == 1 && p != nil &&
					p.Reason == store.PauseFenceRegression && p.Fence == 5 && p.Evidence == in.Evidence &&
					strings.Contains(p.Detail, "other-root") && strings.Contains(p.Detail, Root(5)) &&
					strings.Contains(p.Detail, "lease-reissued") && strings.Contains(p.Detail, "lease-5"), "record %s", dump(rec))
				f.check(reflect.DeepEqual(r.Record, rec) && r.Detail == p.Detail, "result %+v", r)
				rec, err := f.s.Resume(f.ctx, res)
				f.check(err == nil && rec.HighestFence == 5 && rec.LastSeq == 1, "resume: %s, %v", dump(rec), err)
			}
			f.expect(Attempt(res, 5, 2, "p2"), store.DecisionProceed)
		}},
		{"FenceReissuedAfterAbortPauses", func(f *fixture) {
			// The fence was raised and its only segment aborted: nothing was
			// committed under it, but its root is the record's.
			f.acceptN(res, 5, 1)
			f.expect(Attempt(res, 6, 1, "a"), store.DecisionProceed)
			if _, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: Attempt(res, 6, 1, "a").Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			in := Attempt(res, 6, 1, "b")
			in.Root = "other-root"
			f.expect(in, store.DecisionFenceRegression)
			rec := f.record(res)
			f.check(rec.HighestFence == 6 && rec.Root == Root(6) && rec.LastSeq == 0 && rec.Pause != nil && rec.Pause.Fence == 6, "record %s", dump(rec))
		}},
		{"FenceReissuedWhileInFlightPausesAndCommitLands", func(f *fixture) {
			// The evidence does not wait behind BUSY. The mutation already
			// sent still settles: its Commit is recorded under the pause.
			f.acceptN(res, 5, 1)
			first := Attempt(res, 5, 2, "p2")
			f.expect(first, store.DecisionProceed)
			in := Attempt(res, 5, 2, "p2")
			in.Root = "other-root"
			f.expect(in, store.DecisionFenceRegression)
			rec := f.record(res)
			f.check(rec.Pause != nil && rec.Pause.Reason == store.PauseFenceRegression && rec.InFlight != nil &&
				rec.InFlight.OperationID == first.Ref().OperationID() && rec.InFlight.State == store.MutationInFlight, "record %s", dump(rec))
			rc := f.commit(first.Ref())
			f.check(rc.PayloadDigest == first.PayloadDigest && rc.Root == Root(5), "receipt %+v", rc)
			rec = f.record(res)
			f.check(rec.LastSeq == 2 && rec.InFlight == nil && rec.HighestFence == 5 && rec.Pause != nil &&
				rec.Pause.Reason == store.PauseFenceRegression, "record after commit %s", dump(rec))
			// The same at a new fence's first segment, settled by
			// reconciliation this time.
			if _, err := f.s.Resume(f.ctx, res); err != nil {
				f.Fatal(err)
			}
			next := Attempt(res, 6, 1, "a")
			f.expect(next, store.DecisionProceed)
			in = Attempt(res, 6, 1, "b")
			in.Root = "other-root"
			f.expect(in, store.DecisionFenceRegression)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: next.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: next.Ref(), Applied: true, Response: store.StoredResponse{Status: 200}, Now: T0})
			f.check(err == nil && rr.Receipt != nil && rr.Record.LastSeq == 1 && rr.Record.HighestFence == 6 && rr.Record.InFlight == nil &&
				rr.Record.Pause != nil && rr.Record.Pause.Fence == 6, "resolve: %+v, %v", rr, err)
		}},
		{"SameRootOtherPayloadAtHighestIsGap", func(f *fixture) {
			// Only another root proves a double issue; the owner's own
			// out-of-order segment is still a gap and pauses nothing.
			f.acceptN(res, 5, 1)
			before := f.record(res)
			r := f.expect(Attempt(res, 5, 3, "x"), store.DecisionSegmentGap)
			f.check(r.Detail != "", "no detail")
			f.unchanged(res, before)
		}},
		{"Busy", func(f *fixture) {
			f.acceptN(res, 5, 1)
			first := f.expect(Attempt(res, 5, 2, "p2"), store.DecisionProceed).Mutation
			before := f.record(res)
			for _, in := range []store.BeginInput{
				Attempt(res, 5, 3, "p3"), // next segment of the same operation
				Attempt(res, 6, 1, "x"),  // a newer owner
				Attempt(res, 5, 2, "p2"), // the same request again
				Attempt(res, 5, 2, "zz"), // the same segment, another payload
			} {
				r := f.expect(in, store.DecisionBusy)
				f.check(r.Mutation != nil && r.Mutation.OperationID == first.OperationID && r.Mutation.Deadline.Equal(first.Deadline), "busy with %+v", r.Mutation)
			}
			f.unchanged(res, before)
		}},
		{"PausedByOperator", func(f *fixture) {
			f.acceptN(res, 5, 1)
			rec, err := f.s.Pause(f.ctx, store.PauseInput{Resource: res, Reason: store.PauseOperator, Detail: "maintenance", Now: T0})
			f.check(err == nil && rec.Pause != nil && rec.Pause.Reason == store.PauseOperator && rec.Pause.Detail == "maintenance", "pause: %s, %v", dump(rec), err)
			r := f.expect(Attempt(res, 5, 2, "p2"), store.DecisionPaused)
			f.check(r.Record.Pause != nil && r.Record.Pause.Reason == store.PauseOperator, "result %s", dump(r.Record))
		}},
		{"MutationUnknownBlocks", func(f *fixture) {
			f.acceptN(res, 5, 1)
			in := Attempt(res, 5, 2, "p2")
			f.expect(in, store.DecisionProceed)
			m, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0})
			f.check(err == nil && m.State == store.MutationUnknown && m.Cause == store.CauseNoAnswer && m.UnknownSince.Equal(T0), "mark: %+v, %v", m, err)
			before := f.record(res)
			for _, a := range []store.BeginInput{
				Attempt(res, 6, 1, "x"),  // a new fence
				Attempt(res, 5, 3, "p3"), // the next segment
				Attempt(res, 4, 1, "y"),  // a stale owner
				Attempt(res, 5, 1, "p1"), // even a replay
				in,                       // the same request, without RetryUnknown
			} {
				r := f.expect(a, store.DecisionMutationUnknown)
				f.check(r.Mutation != nil && r.Mutation.OperationID == "root-5/2", "blocked by %+v", r.Mutation)
			}
			f.unchanged(res, before)
			other := in
			other.PayloadDigest = Digest("other")
			other.RetryUnknown = true
			f.expect(other, store.DecisionMutationUnknown)
		}},
		{"RetryUnknownProceeds", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: T0}); err != nil {
				f.Fatal(err)
			}
			in.RetryUnknown = true
			in.Now = T0.Add(time.Minute)
			in.Deadline = in.Now.Add(time.Minute)
			r := f.expect(in, store.DecisionProceed)
			f.check(r.Mutation.Attempts == 2 && r.Mutation.State == store.MutationInFlight && r.Mutation.OperationID == "root-5/1" &&
				r.Mutation.Deadline.Equal(in.Deadline) && r.Mutation.UnknownSince.Equal(T0), "retry marker %+v", r.Mutation)
			f.expect(Attempt(res, 6, 1, "x"), store.DecisionBusy)
			rc := f.commit(in.Ref())
			f.check(rc.PayloadDigest == in.PayloadDigest && rc.Source == store.SourceCommit, "receipt %+v", rc)
			f.expect(Attempt(res, 5, 2, "b"), store.DecisionProceed)
		}},
		{"ExpiredInFlightBecomesUnknown", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			early := Attempt(res, 6, 1, "x")
			early.Now = in.Deadline.Add(-time.Nanosecond)
			early.Deadline = early.Now.Add(time.Minute)
			f.expect(early, store.DecisionBusy)
			late := early
			late.Now = in.Deadline
			late.Deadline = late.Now.Add(time.Minute)
			r := f.expect(late, store.DecisionMutationUnknown)
			f.check(r.Mutation.State == store.MutationUnknown && r.Mutation.Cause == store.CauseDeadline, "marker %+v", r.Mutation)
			rec := f.record(res)
			f.check(rec.Unknown() && rec.InFlight.Cause == store.CauseDeadline && rec.InFlight.UnknownSince.Equal(late.Now) && rec.HighestFence == 5,
				"record %s", dump(rec))
			// Marked for good: an earlier clock does not bring it back.
			f.expect(early, store.DecisionMutationUnknown)
			// Even a stale attempt marks an expired marker.
			stale := Attempt(res, 4, 1, "s")
			stale.Now = late.Now
			stale.Deadline = late.Deadline
			f.expect(stale, store.DecisionMutationUnknown)
			us, err := f.s.ListUnknown(f.ctx, late.Now)
			f.check(err == nil && len(us) == 1 && us[0].Resource == res && us[0].OperationID == "root-5/1", "unknown %+v, %v", us, err)
		}},
		{"ExpiredMarkerMarkedByAnyDecision", func(f *fixture) {
			f.acceptN(res, 6, 1)
			in := Attempt(res, 6, 2, "p2")
			f.expect(in, store.DecisionProceed)
			stale := Attempt(res, 5, 1, "s")
			stale.Now = in.Deadline.Add(time.Second)
			stale.Deadline = stale.Now.Add(time.Minute)
			f.expect(stale, store.DecisionMutationUnknown)
			rec := f.record(res)
			f.check(rec.Unknown() && rec.InFlight.Cause == store.CauseDeadline, "record %s", dump(rec))
		}},
		{"AbortKeepsHighestFence", func(f *fixture) {
			f.acceptN(res, 5, 2)
			in := Attempt(res, 6, 1, "a")
			f.expect(in, store.DecisionProceed)
			rec, err := f.s.Abort(f.ctx, store.AbortInput{OpRef: in.Ref(), Now: T0})
			f.check(err == nil && rec.HighestFence == 6 && rec.LastSeq == 0 && rec.InFlight == nil && rec.Root == Root(6), "abort: %s, %v", dump(rec), err)
			f.check(reflect.DeepEqual(f.record(res), rec), "stored %s", dump(f.record(res)))
			f.expect(Attempt(res, 5, 3, "p3"), store.DecisionStaleOwner)
			f.expect(Attempt(res, 6, 2, "b"), store.DecisionSegmentGap)
			f.expect(in, store.DecisionProceed)
		}},
	})
}
