package redis

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// sidecar is one sidecar's view of the shared store with a local
// generation file in dataDir (the option store/redis still offers; the
// sidecar now keeps the generation at the registry, see store/anchor).
type sidecar struct {
	st *Store
}

func openSidecar(t *testing.T, addr, dataDir string, ack bool) sidecar {
	t.Helper()
	st, err := Open(context.Background(), Options{
		Addr: addr, GenerationFile: filepath.Join(dataDir, "redis-generation.json"), AcknowledgeGenerationChange: ack,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return sidecar{st: st}
}

func (s sidecar) accept(t *testing.T, in store.BeginInput) {
	t.Helper()
	res, err := s.st.Begin(context.Background(), in)
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin fence %d: %v %s %s", in.Fence, err, res.Decision, res.Detail)
	}
	if _, err := s.st.Commit(context.Background(), storetest.Answer(in.Ref())); err != nil {
		t.Fatal(err)
	}
}

// rawRecord reads a record straight from Redis, bypassing every check.
func rawRecord(t *testing.T, addr, resource string) (store.Record, bool) {
	t.Helper()
	s, err := Open(context.Background(), Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Record(context.Background(), resource)
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec, true
}

// A Redis that restarted empty is detected by its generation marker: the
// sidecar's store fails closed and never accepts fence 3 after fence 5;
// a sidecar restarted on the same dataDir stays closed; once an operator
// acknowledges, it adopts the new data set. (What then refuses fence 3 is
// the outside anchor: store/anchor's tests.)
func TestRedisRestartedEmptyIsRefused(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	dataDir := t.TempDir()
	sc := openSidecar(t, srv.Addr(), dataDir, false)
	sc.accept(t, storetest.Attempt("acct/1", 5, 1, "a"))

	srv.Wipe()

	ctx := context.Background()
	old := storetest.Attempt("acct/1", 3, 1, "stale owner")
	if res, err := sc.st.Begin(ctx, old); !errors.Is(err, ErrGenerationChanged) || res.Decision != "" {
		t.Fatalf("begin fence 3 on the emptied Redis: %v %s, want ErrGenerationChanged", err, res.Decision)
	}
	if err := sc.st.GenerationLoss(); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("GenerationLoss: %v", err)
	}
	// Any resource: the whole store is closed.
	if _, err := sc.st.Begin(ctx, storetest.Attempt("acct/2", 1, 1, "x")); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("begin of another resource: %v, want ErrGenerationChanged", err)
	}
	if _, ok := rawRecord(t, srv.Addr(), "acct/1"); ok {
		t.Fatal("a record was written on the emptied Redis")
	}

	// The sidecar restarts on its dataDir: still closed.
	sc2 := openSidecar(t, srv.Addr(), dataDir, false)
	if _, err := sc2.st.Begin(ctx, old); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("begin after the sidecar restarted: %v, want ErrGenerationChanged", err)
	}

	// The operator acknowledges: the store adopts the new data set.
	sc3 := openSidecar(t, srv.Addr(), dataDir, true)
	if err := sc3.st.GenerationLoss(); err != nil {
		t.Fatalf("after the acknowledgement: %v", err)
	}
}
