package redis

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestListsFilterSettledRecords: the list calls read an index, then the
// records it names, and a record may have changed in between (another
// replica committed the mutation, resumed the resource). Such a record is
// left out, never dereferenced: the reconcile loop of a sidecar under load
// met exactly this (a resource still in the unknown index whose record no
// longer had a mutation in flight) and panicked. The test puts a settled
// resource back into each index, as the race leaves it.
func TestListsFilterSettledRecords(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s := openPrefix(t, srv, "lists")
	in := storetest.Attempt("lists/r", 1, 1, "a")
	if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin: %v %v", res.Decision, err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
		t.Fatal(err)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer rc.Close()
	for _, index := range []string{s.k.unknown(), s.k.paused()} {
		if err := rc.SAdd(ctx, index, "lists/r").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.ListUnknown(ctx, storetest.T0.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("ListUnknown with a settled resource in the index: %v %v, want none", got, err)
	}
	if got, err := s.ListPaused(ctx); err != nil || len(got) != 0 {
		t.Errorf("ListPaused with a resumed resource in the index: %v %v, want none", got, err)
	}
}
