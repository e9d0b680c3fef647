package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
)

// runQuiet checks the rule that "not applied" is settled only on evidence
// no later apply can overtake: evidence gathered at or after the marker's
// quiet time (BeginInput.QuietAt, raised by a RetryUnknown; for a marker
// without one, its Deadline plus store.LegacyQuietDelay), or evidence that
// closes the operation. "Applied" is settled at any time. A refusal is a
// *store.NotQuietError (store.ErrNotQuiet) and writes nothing.
func runQuiet(t *testing.T, newStore Factory) {
	// unknown begins segment 1 of fence 5 (QuietAt T0+2m unless in says
	// otherwise) and declares its outcome unknown at T0.
	unknown := func(f *fixture, in store.BeginInput) store.Record {
		f.Helper()
		f.expect(in, store.DecisionProceed)
		if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: in.Now}); err != nil {
			f.Fatal(err)
		}
		return f.record(res)
	}
	notApplied := func(f *fixture, in store.BeginInput, now time.Time, age time.Duration) error {
		f.Helper()
		_, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Now: now, EvidenceAge: age})
		return err
	}
	// refused checks a NotQuietError naming the quiet time and how far the
	// evidence was from it, and that nothing changed.
	refused := func(f *fixture, err error, quiet time.Time, remaining time.Duration, before store.Record) {
		f.Helper()
		var nq *store.NotQuietError
		f.check(errors.Is(err, store.ErrNotQuiet) && errors.As(err, &nq) && nq.QuietAt.Equal(quiet) && nq.Remaining == remaining &&
			nq.OperationID == "root-5/1" && nq.Resource == res, "resolve as not applied before the quiet time: %v (%+v), want a NotQuietError at %v, %v early", err, nq, quiet, remaining)
		f.unchanged(res, before)
	}
	cases(t, newStore, []testCase{
		{"NotAppliedBeforeQuietRefused", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			before := unknown(f, in)
			f.check(before.InFlight.QuietAt.Equal(in.QuietAt) && before.InFlight.QuietBy().Equal(in.QuietAt), "marker %+v, want QuietAt %v", before.InFlight, in.QuietAt)
			refused(f, notApplied(f, in, T0, 0), in.QuietAt, 2*time.Minute, before)
			refused(f, notApplied(f, in, in.QuietAt.Add(-time.Nanosecond), 0), in.QuietAt, time.Nanosecond, before)
			// Evidence gathered before the quiet time proves nothing, however
			// late it is presented.
			refused(f, notApplied(f, in, in.QuietAt.Add(time.Hour), time.Hour+time.Second), in.QuietAt, time.Second, before)
			// Unknown mutations are still listed; the resource still blocks.
			us, err := f.s.ListUnknown(f.ctx, in.QuietAt.Add(time.Hour))
			f.check(err == nil && len(us) == 1 && us[0].OperationID == "root-5/1", "unknown: %+v, %v", us, err)
			later := Attempt(res, 6, 1, "b")
			later.Now, later.Deadline, later.QuietAt = T0.Add(time.Second), T0.Add(time.Minute), T0.Add(2*time.Minute)
			f.expect(later, store.DecisionMutationUnknown)
			// At the quiet time, evidence of "not applied" is stable.
			f.check(notApplied(f, in, in.QuietAt.Add(time.Second), time.Second) == nil, "resolve at the quiet time refused")
			rec := f.record(res)
			f.check(rec.InFlight == nil && rec.LastSeq == 0 && rec.HighestFence == 5, "record %s", dump(rec))
		}},
		{"AppliedAtAnyTime", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			unknown(f, in)
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Applied: true, Response: store.StoredResponse{Status: 200}, Now: T0})
			f.check(err == nil && rr.Receipt != nil && rr.Record.LastSeq == 1 && rr.Record.InFlight == nil, "resolve as applied before the quiet time: %+v, %v", rr, err)
		}},
		{"LateCommitAtAnyTime", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			unknown(f, in)
			f.commit(in.Ref())
			f.check(f.record(res).LastSeq == 1, "record %s", dump(f.record(res)))
		}},
		{"ClosedSettlesAtOnce", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			unknown(f, in)
			rr, err := f.s.Resolve(f.ctx, store.ResolveInput{OpRef: in.Ref(), Closed: true, Now: T0})
			f.check(err == nil && !rr.Applied && rr.Record.InFlight == nil && rr.Record.LastSeq == 0, "closed evidence before the quiet time: %+v, %v", rr, err)
			f.expect(Attempt(res, 5, 1, "a"), store.DecisionProceed)
		}},
		{"ExpiredMarkerWaitsForQuiet", func(f *fixture) {
			// A sidecar that died mid-forward leaves its marker IN_FLIGHT:
			// past its deadline it is unknown, and not quiet before QuietAt.
			in := Attempt(res, 5, 1, "a")
			f.expect(in, store.DecisionProceed)
			before := f.record(res)
			refused(f, notApplied(f, in, in.Deadline, 0), in.QuietAt, in.QuietAt.Sub(in.Deadline), before)
			f.check(notApplied(f, in, in.QuietAt, 0) == nil, "resolve of an expired marker at its quiet time refused")
		}},
		{"RetryRaisesQuiet", func(f *fixture) {
			in := Attempt(res, 5, 1, "a")
			in.RetryUnknown = true
			unknown(f, in)
			// The retry promises a later quiet time: it is the marker's now.
			retry := in
			retry.Now, retry.Deadline, retry.QuietAt = T0.Add(10*time.Second), T0.Add(time.Minute), T0.Add(5*time.Minute)
			r := f.expect(retry, store.DecisionProceed)
			f.check(r.Mutation.Attempts == 2 && r.Mutation.QuietAt.Equal(retry.QuietAt), "retry marker %+v", r.Mutation)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: retry.Now}); err != nil {
				f.Fatal(err)
			}
			before := f.record(res)
			refused(f, notApplied(f, in, in.QuietAt, 0), retry.QuietAt, 3*time.Minute, before)
			// A retry promising an earlier one never lowers it: the earlier
			// attempts may still land.
			early := in
			early.Now, early.Deadline, early.QuietAt = T0.Add(20*time.Second), T0.Add(30*time.Second), T0.Add(40*time.Second)
			r = f.expect(early, store.DecisionProceed)
			f.check(r.Mutation.Attempts == 3 && r.Mutation.QuietAt.Equal(retry.QuietAt), "retry marker %+v, want QuietAt kept at %v", r.Mutation, retry.QuietAt)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: early.Now}); err != nil {
				f.Fatal(err)
			}
			before = f.record(res)
			refused(f, notApplied(f, in, early.QuietAt, 0), retry.QuietAt, retry.QuietAt.Sub(early.QuietAt), before)
			f.check(notApplied(f, in, retry.QuietAt, 0) == nil, "resolve at the raised quiet time refused")
		}},
		{"RepairedMarkerWaitsForQuiet", func(f *fixture) {
			// A mutation the store lost and Repair put back from its anchor
			// may still take effect for the repair's window.
			rec := f.repair(Progress(5, 0, 1, "a"), T0)
			quiet := T0.Add(time.Minute)
			f.check(rec.Unknown() && rec.InFlight.QuietBy().Equal(quiet), "repaired marker %+v, want quiet by %v", rec.InFlight, quiet)
			in := Attempt(res, 5, 1, "a")
			refused(f, notApplied(f, in, T0, 0), quiet, time.Minute, rec)
			f.check(notApplied(f, in, quiet, 0) == nil, "resolve of a repaired marker at its quiet time refused")
		}},
		{"MarkerWithoutQuietAt", func(f *fixture) {
			// A marker stored before QuietAt was kept (or begun without one)
			// is quiet store.LegacyQuietDelay after its deadline.
			in := Attempt(res, 5, 1, "a")
			in.QuietAt = time.Time{}
			before := unknown(f, in)
			quiet := in.Deadline.Add(store.LegacyQuietDelay)
			f.check(before.InFlight.QuietAt.IsZero() && before.InFlight.QuietBy().Equal(quiet), "marker %+v, want no QuietAt, quiet by %v", before.InFlight, quiet)
			refused(f, notApplied(f, in, quiet.Add(-time.Second), 0), quiet, time.Second, before)
			// A retry of it keeps the legacy bound when that is later.
			retry := in
			retry.RetryUnknown = true
			retry.Now, retry.Deadline, retry.QuietAt = T0.Add(time.Second), T0.Add(time.Minute), T0.Add(2*time.Minute)
			r := f.expect(retry, store.DecisionProceed)
			f.check(r.Mutation.QuietAt.Equal(quiet), "retry of a legacy marker: QuietAt %v, want %v", r.Mutation.QuietAt, quiet)
			if _, err := f.s.MarkUnknown(f.ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: retry.Now}); err != nil {
				f.Fatal(err)
			}
			f.check(notApplied(f, in, quiet, 0) == nil, "resolve at the legacy quiet time refused")
		}},
	})
}
