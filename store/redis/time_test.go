package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// replicaAt opens a store over srv under prefix whose caller (a sidecar)
// believes it is skew off the real time: every input it sends carries
// that Now.
func replicaAt(t *testing.T, srv *redistest.Server, prefix string, callerClock bool) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Addr: srv.Addr(), Prefix: prefix, CallerClock: callerClock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestReplicasShareTheServerClock: two replicas whose clocks are an hour
// apart share the store. Replica 1 (an hour slow) begins a mutation with a
// one-minute window; replica 2 (an hour fast) then finds it BUSY, not
// expired, because both decide at Redis's TIME. Under the caller's clock
// the fast replica would already take it for MUTATION_UNKNOWN, and the slow
// one would keep a marker BUSY for an hour past its real deadline.
func TestReplicasShareTheServerClock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	real := clock.Real().Now().UTC()
	slow, fast := real.Add(-time.Hour), real.Add(time.Hour)
	for _, c := range []struct {
		name        string
		callerClock bool
		want        store.Decision
	}{
		{"server clock", false, store.DecisionBusy},
		{"caller clock", true, store.DecisionMutationUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := "time" + map[bool]string{false: "srv", true: "caller"}[c.callerClock]
			r1 := replicaAt(t, srv, prefix, c.callerClock)
			r2 := replicaAt(t, srv, prefix, c.callerClock)

			in := storetest.Attempt("skew/r", 1, 1, "a")
			in.Now, in.Deadline, in.QuietAt = slow, slow.Add(time.Minute), slow.Add(2*time.Minute)
			res, err := r1.Begin(ctx, in)
			if err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin on the slow replica: %v %v", res.Decision, err)
			}
			m := res.Mutation
			if !c.callerClock {
				if d := m.BegunAt.Sub(real); d < -5*time.Second || d > 5*time.Second {
					t.Errorf("marker begun at %v, %v from the real time; want the server's time", m.BegunAt, d)
				}
				// The minute asked for, padded by StepBehind (the most the
				// Store's estimate of the server's clock may lag it).
				if w := m.Deadline.Sub(m.BegunAt); w != time.Minute+StepBehind {
					t.Errorf("marker window %v, want the minute the caller asked for plus StepBehind", w)
				}
			}

			next := storetest.Attempt("skew/r", 1, 2, "b")
			next.Now, next.Deadline, next.QuietAt = fast, fast.Add(time.Minute), fast.Add(2*time.Minute)
			res2, err := r2.Begin(ctx, next)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Decision != c.want {
				t.Errorf("the fast replica's Begin while the slow one's mutation runs: %s, want %s", res2.Decision, c.want)
			}

			unknown, err := r2.ListUnknown(ctx, fast)
			if err != nil {
				t.Fatal(err)
			}
			if listed := len(unknown) > 0; listed != (c.want == store.DecisionMutationUnknown) {
				t.Errorf("ListUnknown on the fast replica lists %d; the mutation is %s", len(unknown), c.want)
			}
		})
	}
}

// TestReceiptsStampedByServer: a receipt's AcceptedAt is the server's time
// whatever the committing replica's clock says, and retention (maxAge) ages
// receipts by the server's clock too: a replica whose clock runs three days
// ahead deletes nothing under a day's retention, where under its own clock
// it would delete the older segment's receipt (the last one is always kept).
func TestReceiptsStampedByServer(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		callerClock bool
		deleted     int
	}{
		{"server clock", false, 0},
		{"caller clock", true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := replicaAt(t, srv, "stamp"+c.name[:1], c.callerClock)
			real := clock.Real().Now().UTC()
			for seq := uint64(1); seq <= 2; seq++ {
				in := storetest.Attempt("stamp/r", 1, seq, "a")
				in.Now, in.Deadline, in.QuietAt = real, real.Add(time.Minute), real.Add(2*time.Minute)
				if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
					t.Fatalf("Begin: %v %v", res.Decision, err)
				}
				ans := storetest.Answer(in.Ref())
				ans.Now = real
				rc, err := s.Commit(ctx, ans)
				if err != nil {
					t.Fatal(err)
				}
				if d := rc.AcceptedAt.Sub(real); d < -5*time.Second || d > 5*time.Second {
					t.Fatalf("receipt accepted at %v, %v from the real time", rc.AcceptedAt, d)
				}
			}
			r, err := s.Compact(ctx, store.CompactInput{Now: real.Add(72 * time.Hour), MaxAge: 24 * time.Hour, MaxDeletes: 10})
			if err != nil {
				t.Fatal(err)
			}
			if r.Receipts != c.deleted {
				t.Errorf("compaction by a replica three days ahead deleted %d receipts, want %d", r.Receipts, c.deleted)
			}
		})
	}
}

// TestNotAppliedDecidesOnServerClock: "not applied" is settled only once a
// mutation is quiet, judged on Redis's TIME. Replica 1 (its clock right)
// begins a mutation that may still take effect for two minutes (QuietAt)
// and its answer is lost; replica 2, whose clock runs an hour ahead, asks
// to settle it as not applied at once. On the server's clock the evidence
// (TIME minus its age, which the replica measured) is two minutes early:
// refused (ErrNotQuiet), nothing written. Under the callers' clocks the
// fast replica's Now is past the slow one's QuietAt and the write that may
// still land is settled "not applied" (what CallerClock, for virtual-time
// tests only, gives up). On the server's clock, evidence presented late but
// gathered before the quiet time is refused too, and fresh evidence settles
// it once the (short) quiet time has passed.
func TestNotAppliedDecidesOnServerClock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		callerClock bool
		early       bool // the fast replica settles before the quiet time
	}{
		{"server clock", false, false},
		{"caller clock", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := "quiet" + c.name[:1]
			r1 := replicaAt(t, srv, prefix, c.callerClock)
			r2 := replicaAt(t, srv, prefix, c.callerClock)
			real := clock.Real().Now().UTC()
			fast := real.Add(time.Hour)

			in := storetest.Attempt("quiet/r", 1, 1, "a")
			in.Now, in.Deadline, in.QuietAt = real, real.Add(time.Minute), real.Add(2*time.Minute)
			if res, err := r1.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin: %v %v", res.Decision, err)
			}
			if _, err := r1.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: real}); err != nil {
				t.Fatal(err)
			}
			_, err := r2.Resolve(ctx, store.ResolveInput{OpRef: in.Ref(), Now: fast})
			if c.early {
				if err != nil {
					t.Fatalf("under the callers' clocks the fast replica's resolve: %v, want it settled (early)", err)
				}
				return
			}
			var nq *store.NotQuietError
			if !errors.Is(err, store.ErrNotQuiet) || !errors.As(err, &nq) {
				t.Fatalf("the fast replica settled %s as not applied two minutes before it is quiet: %v", in.Ref().OperationID(), err)
			}
			if nq.Remaining < time.Minute || nq.Remaining > 2*time.Minute+StepBehind {
				t.Errorf("not quiet for another %v on the server's clock, want about 2m", nq.Remaining)
			}
			if rec, err := r2.Record(ctx, "quiet/r"); err != nil || !rec.Unknown() {
				t.Fatalf("record after the refused resolve: %+v %v, want the mutation still unknown", rec, err)
			}

			// A mutation quiet a few milliseconds after it begins: evidence
			// gathered before that (an hour ago by the fast replica's
			// monotonic measure) is refused, fresh evidence settles it.
			soon := storetest.Attempt("quiet/soon", 1, 1, "a")
			now := clock.Real().Now().UTC().Add(time.Hour)
			soon.Now, soon.Deadline, soon.QuietAt = now, now.Add(time.Millisecond), now.Add(20*time.Millisecond)
			if res, err := r2.Begin(ctx, soon); err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin: %v %v", res.Decision, err)
			}
			if _, err := r2.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: soon.Ref(), Now: now}); err != nil {
				t.Fatal(err)
			}
			for deadline := clock.Real().Now().Add(10 * time.Second); ; {
				now := clock.Real().Now().UTC().Add(time.Hour)
				_, err := r2.Resolve(ctx, store.ResolveInput{OpRef: soon.Ref(), Now: now, EvidenceAge: time.Hour})
				if !errors.Is(err, store.ErrNotQuiet) {
					t.Fatalf("evidence gathered an hour before the mutation began: %v, want ErrNotQuiet", err)
				}
				_, err = r2.Resolve(ctx, store.ResolveInput{OpRef: soon.Ref(), Now: now})
				if err == nil {
					break
				}
				if !errors.Is(err, store.ErrNotQuiet) || clock.Real().Now().After(deadline) {
					t.Fatalf("fresh evidence of a quiet mutation: %v", err)
				}
				clock.Sleep(clock.Real(), 5*time.Millisecond, nil)
			}
			if rec, err := r2.Record(ctx, "quiet/soon"); err != nil || rec.InFlight != nil {
				t.Fatalf("record after the resolve: %+v %v, want settled", rec, err)
			}
		})
	}
}

// TestStepRefusesADecisionOffTheServerClock: a Store whose estimate of
// the server's clock is off (an hour behind or ahead, as a clock stepped
// under it would leave it; or past StepBehind or StepAhead) decides a
// Commit at that time; the step script refuses it, writing nothing,
// and the Commit runs again at the TIME the script returned: the receipt
// is stamped with the server's time, not the estimate's. The estimate
// ahead is set 250 ms past StepAhead: the server's clock runs on between
// the reset and the script, by some milliseconds on a loaded machine
// (under -race in CI, 3 x StepAhead was caught up with), which only
// shrinks a lead; a lag only grows.
func TestStepRefusesADecisionOffTheServerClock(t *testing.T) {
	srv := redistest.Start(t)
	s := replicaAt(t, srv, "offclock", false)
	ctx := context.Background()
	for i, off := range []time.Duration{-time.Hour, time.Hour, -3 * StepBehind, StepAhead + 250*time.Millisecond} {
		in := storetest.Attempt("offclock/r", 1, uint64(i+1), "a")
		if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("Begin: %s %v", res.Decision, err)
		}
		refused := s.refusedTime.Load()
		real := clock.Real().Now().UTC()
		s.clock.reset(real.Add(off))
		rc, err := s.Commit(ctx, storetest.Answer(in.Ref()))
		if err != nil {
			t.Fatalf("Commit with the estimate %v off: %v", off, err)
		}
		if d := rc.AcceptedAt.Sub(real); d < -5*time.Second || d > 5*time.Second {
			t.Errorf("estimate %v off: receipt accepted at %v, %v from the server's time", off, rc.AcceptedAt, d)
		}
		if s.refusedTime.Load() == refused {
			t.Errorf("estimate %v off: the step script took the decision", off)
		}
	}
}

// TestQuietTimeNeverEarlyWithALaggingEstimate: a Store whose estimate of
// the server's clock lags it (here by 200 ms, inside StepBehind, so the
// step script takes the decision) still places a Begin's quiet time and
// deadline no earlier than the server's time when the Begin was asked plus
// the windows the sidecar asked for: they are padded by StepBehind, the
// most the script lets a decision lag (store.TxOptions.ClockLag). A quiet
// time placed early would let "not applied" be concluded while the
// backend may still apply the write.
func TestQuietTimeNeverEarlyWithALaggingEstimate(t *testing.T) {
	srv := redistest.Start(t)
	s := replicaAt(t, srv, "lag", false)
	ctx := context.Background()
	// Segment 1 warms the cache, so that segment 2's Begin is one step
	// at the estimate (a cold read would refresh it from TIME).
	first := storetest.Attempt("lag/r", 1, 1, "a")
	if res, err := s.Begin(ctx, first); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin: %s %v", res.Decision, err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(first.Ref())); err != nil {
		t.Fatal(err)
	}
	in := storetest.Attempt("lag/r", 1, 2, "b")
	const quiet, window = 5 * time.Second, 2 * time.Second
	before := readServerTime(t, srv)
	s.clock.reset(before.Add(-200 * time.Millisecond))
	in.Now = before
	in.Deadline, in.QuietAt = in.Now.Add(window), in.Now.Add(quiet)
	res, err := s.Begin(ctx, in)
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin: %s %v", res.Decision, err)
	}
	m := res.Record.InFlight
	if m == nil {
		t.Fatal("no marker in flight")
	}
	if m.QuietAt.Before(before.Add(quiet)) {
		t.Errorf("quiet at %v: %v before the server's time at the Begin plus the quiet window", m.QuietAt, before.Add(quiet).Sub(m.QuietAt))
	}
	if m.Deadline.Before(before.Add(window)) {
		t.Errorf("deadline %v: %v before the server's time at the Begin plus the window", m.Deadline, before.Add(window).Sub(m.Deadline))
	}
}

// readServerTime reads the server's TIME.
func readServerTime(t *testing.T, srv *redistest.Server) time.Time {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer c.Close()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UTC()
}
