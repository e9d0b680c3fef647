package redis

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestUnknownOutcomeDropsCachedKeys: a step whose script was sent but
// whose reply never came (the server killed under it) has an unknown
// outcome, so the Store forgets what it held for the step's keys: the
// record and the receipt it read, and the values it meant to write. The
// next transition of the resource reads them from the server (and finds
// the step did not run).
func TestUnknownOutcomeDropsCachedKeys(t *testing.T) {
	srv := redistest.Start(t, durable...)
	s, hook := openHooked(t, srv, "drop")
	ctx := context.Background()
	first := storetest.Attempt("drop/r", 1, 1, "a")
	if got := begin(t, s, first, storetest.T0); got != store.DecisionProceed {
		t.Fatalf("Begin: %s", got)
	}
	if _, err := s.Commit(ctx, storetest.Answer(first.Ref())); err != nil {
		t.Fatal(err)
	}
	recKey := s.k.record("drop/r")
	if _, ok := s.cache.get(recKey); !ok {
		t.Fatal("the record a Commit wrote is not cached")
	}

	next := storetest.Attempt("drop/r", 1, 2, "b")
	hook.arm(srv.Kill)
	res, err := s.Begin(ctx, next)
	redisError(t, "Begin with the server killed under it", err)
	if res.Decision != "" {
		t.Errorf("Begin with the server killed decided %s", res.Decision)
	}
	for _, k := range []string{recKey, s.k.receipt(store.ReceiptKey{Resource: "drop/r", Fence: 1, Seq: 2})} {
		if e, ok := s.cache.get(k); ok {
			t.Errorf("after the unknown outcome the cache still holds %s (%d bytes, present %v)", k, len(e.val), e.present)
		}
	}
	srv.Restart()
	if got := begin(t, s, next, storetest.T0); got != store.DecisionProceed {
		t.Errorf("Begin after the restart: %s, want PROCEED (the killed Begin never ran)", got)
	}
}
