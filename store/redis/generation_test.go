package redis

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/storetest"
)

// sidecar is one sidecar's view of the shared store: the redis store with
// its generation file and the checkpoint guard, both in dataDir.
type sidecar struct {
	st *Store
	g  *guard.Store
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
	g, err := guard.Wrap(st, filepath.Join(dataDir, "store-checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	return sidecar{st: st, g: g}
}

func (s sidecar) accept(t *testing.T, in store.BeginInput) {
	t.Helper()
	res, err := s.g.Begin(context.Background(), in)
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin fence %d: %v %s %s", in.Fence, err, res.Decision, res.Detail)
	}
	if _, err := s.g.Commit(context.Background(), storetest.Answer(in.Ref())); err != nil {
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
// acknowledges, the checkpoint still refuses fence 3 and pauses the
// resource.
func TestRedisRestartedEmptyIsRefused(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	dataDir := t.TempDir()
	sc := openSidecar(t, srv.Addr(), dataDir, false)
	sc.accept(t, storetest.Attempt("acct/1", 5, 1, "a"))

	srv.Kill()
	clearDir(t, srv.Dir())
	srv.Restart()

	ctx := context.Background()
	old := storetest.Attempt("acct/1", 3, 1, "stale owner")
	if res, err := sc.g.Begin(ctx, old); !errors.Is(err, ErrGenerationChanged) || res.Decision != "" {
		t.Fatalf("begin fence 3 on the emptied Redis: %v %s, want ErrGenerationChanged", err, res.Decision)
	}
	if err := sc.st.GenerationLoss(); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("GenerationLoss: %v", err)
	}
	// Any resource: the whole store is closed.
	if _, err := sc.g.Begin(ctx, storetest.Attempt("acct/2", 1, 1, "x")); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("begin of another resource: %v, want ErrGenerationChanged", err)
	}
	if _, ok := rawRecord(t, srv.Addr(), "acct/1"); ok {
		t.Fatal("a record was written on the emptied Redis")
	}

	// The sidecar restarts on its dataDir: still closed.
	sc2 := openSidecar(t, srv.Addr(), dataDir, false)
	if _, err := sc2.g.Begin(ctx, old); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("begin after the sidecar restarted: %v, want ErrGenerationChanged", err)
	}

	// The operator acknowledges: the checkpoint keeps refusing fence 3.
	sc3 := openSidecar(t, srv.Addr(), dataDir, true)
	res, err := sc3.g.Begin(ctx, old)
	if err != nil || res.Decision != store.DecisionFenceRegression {
		t.Fatalf("begin fence 3 after the acknowledgement: %v %s, want FENCE_REGRESSION", err, res.Decision)
	}
	rec, ok := rawRecord(t, srv.Addr(), "acct/1")
	if !ok || rec.HighestFence != 0 || rec.Pause == nil || !strings.Contains(rec.Pause.Detail, "fence 5") {
		t.Fatalf("record after the refusal: %+v, want paused, fence 3 not written", rec)
	}
}

// A Redis restored from an AOF taken before fence 5 was accepted keeps its
// generation marker, but the sidecar's checkpoint catches it: fence 3
// (above the restored highest fence 1) is refused and the resource paused.
func TestRedisRestoredFromOldAOFIsRefused(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	dataDir := t.TempDir()
	sc := openSidecar(t, srv.Addr(), dataDir, false)
	sc.accept(t, storetest.Attempt("acct/1", 1, 1, "a"))

	srv.Kill()
	snapshot := t.TempDir()
	copyDir(t, srv.Dir(), snapshot)
	srv.Restart()
	sc.accept(t, storetest.Attempt("acct/1", 5, 1, "b"))

	srv.Kill()
	clearDir(t, srv.Dir())
	copyDir(t, snapshot, srv.Dir())
	srv.Restart()
	if rec, _ := rawRecord(t, srv.Addr(), "acct/1"); rec.HighestFence != 1 {
		t.Fatalf("restored record: highest fence %d, want 1 (the old AOF)", rec.HighestFence)
	}

	res, err := sc.g.Begin(context.Background(), storetest.Attempt("acct/1", 3, 1, "stale owner"))
	if err != nil || res.Decision != store.DecisionFenceRegression {
		t.Fatalf("begin fence 3 on the restored Redis: %v %s %s, want FENCE_REGRESSION", err, res.Decision, res.Detail)
	}
	rec, _ := rawRecord(t, srv.Addr(), "acct/1")
	if rec.HighestFence != 1 || rec.InFlight != nil || rec.Pause == nil || rec.Pause.Reason != store.PauseFenceRegression {
		t.Fatalf("record after the refusal: %+v, want paused at highest fence 1", rec)
	}
}

// clearDir removes the server's data files (not its log).
func clearDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "redis.log" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the data files of src into dst (not the log).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "redis.log" {
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
