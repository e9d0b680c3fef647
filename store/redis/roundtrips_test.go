package redis

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestRoundTripsPerTransition counts what crosses the wire (the
// roundTrips hook of bench_test.go: one per command sent alone, one per
// pipeline) for each transition of a store: a Begin of a resource this
// Store never read reads it first (2), then, warm, every transition is
// the one step script: Begin + Commit 2, a REPLAY 1, a Commit that trims
// 1. It decides by the caller's clock, so that no scheduling stall past
// StepBehind makes the script refuse a decision and the count move (the
// benchmark counts the server-clock path).
func TestRoundTripsPerTransition(t *testing.T) {
	srv := redistest.Start(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	h := &roundTrips{}
	c.AddHook(h)
	s, err := New(c, Options{Prefix: "rt", CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A first call of another resource dials the connections (their
	// handshakes are no transition's).
	warm := storetest.Attempt("rt/warm", 1, 1, "w")
	if _, err := s.Begin(ctx, warm); err != nil {
		t.Fatal(err)
	}
	count := func(what string, want int64, f func() error) {
		t.Helper()
		before := h.n.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := h.n.Load() - before; got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	begin := func(in store.BeginInput, want store.Decision) func() error {
		return func() error {
			res, err := s.Begin(ctx, in)
			if err == nil && res.Decision != want {
				t.Errorf("Begin %s: %s, want %s", in.Ref().OperationID(), res.Decision, want)
			}
			return err
		}
	}
	commit := func(in store.CommitInput) func() error {
		return func() error { _, err := s.Commit(ctx, in); return err }
	}

	first := storetest.Attempt("rt/r", 1, 1, "p1")
	count("cold Begin", 2, begin(first, store.DecisionProceed))
	count("Commit", 1, commit(storetest.Answer(first.Ref())))
	for seq := uint64(2); seq <= 4; seq++ {
		in := storetest.Attempt("rt/r", 1, seq, "p")
		count("warm Begin", 1, begin(in, store.DecisionProceed))
		count("warm Commit", 1, commit(storetest.Answer(in.Ref())))
	}
	count("REPLAY", 1, begin(storetest.Attempt("rt/r", 1, 4, "p"), store.DecisionReplay))

	in := storetest.Attempt("rt/r", 1, 5, "p")
	count("Begin", 1, begin(in, store.DecisionProceed))
	trim := storetest.Answer(in.Ref())
	trim.KeepReceipts = 2
	count("Commit with trim", 1, commit(trim))
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Receipts != 2 {
		t.Errorf("%d receipts after the trimming Commit, want 2", st.Receipts)
	}
	if n := s.retried.Load(); n != 0 {
		t.Errorf("%d steps refused by the script on a store no one else writes", n)
	}
}
