package guard_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// legacyJSON is a checkpoint file as the JSON version of the guard wrote it.
const legacyJSON = `{"version":1,"clock":7,"resources":{
	"acct/1":{"fence":5,"seq":2,"touched":6},
	"acct/2":{"fence":3,"seq":0,"unknownFence":3,"unknownSeq":1,"touched":7},
	"acct/3":{"fence":9,"seq":4,"sawPause":true,"touched":5}}}`

// An upgraded sidecar keeps its checkpoints: the JSON file is imported
// into the bbolt file, renamed *.imported, and a store that lost the data
// is refused as before, also after a restart (the import is not needed
// again).
func TestImportJSON(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, "store-checkpoint.json")
	if err := writeFile(legacy, legacyJSON); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "store-checkpoint.db")
	g, err := guard.WrapOptions(memory.New(memory.Options{}), path, guard.Options{ImportJSON: legacy})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]guard.Checkpoint{
		"acct/1": {Fence: 5, Seq: 2},
		"acct/2": {Fence: 3, UnknownFence: 3, UnknownSeq: 1},
		"acct/3": {Fence: 9, Seq: 4, SawPause: true},
	}
	for r, w := range want {
		c, ok := g.Checkpoint(r)
		c.Touched = 0
		if !ok || c != w {
			t.Fatalf("imported %s: %+v %v, want %+v", r, c, ok, w)
		}
	}
	if _, err := os.Stat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("legacy file still in place: %v", err)
	}
	if _, err := os.Stat(legacy + guard.ImportedSuffix); err != nil {
		t.Fatalf("legacy file not kept as %s: %v", guard.ImportedSuffix, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	empty := memory.New(memory.Options{})
	g2, err := guard.WrapOptions(empty, path, guard.Options{ImportJSON: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	wantRegression(t, g2, empty, storetest.Attempt("acct/1", 3, 1, "old owner"), "fence 5, segment 2")
	res := begin(t, g2, storetest.Attempt("acct/2", 4, 1, "x"))
	if res.Decision != store.DecisionFenceRegression {
		t.Fatalf("imported unknown forgotten by the store: %s, want FENCE_REGRESSION", res.Decision)
	}
}

// The import never lowers what the bbolt file already holds (a legacy
// file imported again after a crash, or left by a downgrade), keeps an
// outstanding unknown, and does not invent a seen pause.
func TestImportNeverLowers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.db")
	g := wrap(t, memory.New(memory.Options{}), path)
	accept(t, g, storetest.Attempt("acct/1", 7, 1, "a")) // above the legacy fence 5
	accept(t, g, storetest.Attempt("acct/3", 9, 1, "a")) // not paused here
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(dir, "cp.json")
	if err := writeFile(legacy, legacyJSON); err != nil {
		t.Fatal(err)
	}
	g2, err := guard.WrapOptions(memory.New(memory.Options{}), path, guard.Options{ImportJSON: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	for r, w := range map[string]guard.Checkpoint{
		"acct/1": {Fence: 7, Seq: 1},
		"acct/2": {Fence: 3, UnknownFence: 3, UnknownSeq: 1},
		"acct/3": {Fence: 9, Seq: 4},
	} {
		c, ok := g2.Checkpoint(r)
		c.Touched = 0
		if !ok || c != w {
			t.Fatalf("merged %s: %+v %v, want %+v", r, c, ok, w)
		}
	}
}

// A corrupt legacy file fails Wrap and stays where it is: the guard never
// starts without checkpoints it had.
func TestImportCorruptJSONFails(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, "cp.json")
	if err := writeFile(legacy, `{"version":1,"resources":{"a":{"fence":"x"}}}`); err != nil {
		t.Fatal(err)
	}
	_, err := guard.WrapOptions(memory.New(memory.Options{}), filepath.Join(dir, "cp.db"), guard.Options{ImportJSON: legacy})
	if !errors.Is(err, guard.ErrCorrupt) {
		t.Fatalf("corrupt legacy file: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(legacy); err != nil {
		t.Fatalf("corrupt legacy file moved: %v", err)
	}
}

// Checkpoints and their order of use survive a restart: the bound drops
// the least recently used one across Close and Wrap.
func TestCheckpointsPersistAndStayBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	opts := guard.Options{MaxEntries: 2}
	g, err := guard.WrapOptions(memory.New(memory.Options{}), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	accept(t, g, storetest.Attempt("a", 1, 1, "x"))
	accept(t, g, storetest.Attempt("b", 1, 1, "x"))
	accept(t, g, storetest.Attempt("a", 1, 2, "x")) // a is now the most recent
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Begin(context.Background(), storetest.Attempt("a", 1, 3, "x")); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("begin after close: %v, want ErrClosed", err)
	}
	g2, err := guard.WrapOptions(memory.New(memory.Options{}), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if c, ok := g2.Checkpoint("a"); !ok || c.Fence != 1 || c.Seq != 2 {
		t.Fatalf("checkpoint a after restart: %+v %v", c, ok)
	}
	accept(t, g2, storetest.Attempt("c", 1, 1, "x"))
	if _, ok := g2.Checkpoint("b"); ok {
		t.Fatal("least recently used checkpoint b kept past the bound")
	}
	for _, r := range []string{"a", "c"} {
		if _, ok := g2.Checkpoint(r); !ok {
			t.Fatalf("checkpoint %s dropped", r)
		}
	}
}
