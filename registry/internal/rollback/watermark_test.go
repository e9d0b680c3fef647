package rollback_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// TestCheckUsesTheWatermarkOfBeforeTheRead: a write learnt while a read
// is on its way is no evidence that the read went back; only what was
// seen before the read was sent is.
func TestCheckUsesTheWatermarkOfBeforeTheRead(t *testing.T) {
	var w rollback.Watermark
	if err := w.Check(w.Snapshot(), registry.Meta{Revision: 5, IssuerEpoch: 2, PolicySeq: 1}, true); err != nil {
		t.Fatal(err)
	}
	seen := w.Snapshot()
	w.Heard(registry.Meta{Revision: 6, IssuerEpoch: 2, PolicySeq: 1}, 40)
	if err := w.Check(seen, registry.Meta{Revision: 5, IssuerEpoch: 2, PolicySeq: 1}, true); err != nil {
		t.Fatalf("a read served before a write heard of: %v", err)
	}
	if st := w.Snapshot(); st.Revision != 6 || st.MaxFence != 40 {
		t.Fatalf("the watermark went back to %+v", st)
	}
	for _, m := range []registry.Meta{{Revision: 4, IssuerEpoch: 2, PolicySeq: 1}, {Revision: 5, IssuerEpoch: 1, PolicySeq: 1}, {Revision: 5, IssuerEpoch: 2}} {
		if err := w.Check(seen, m, true); !errors.Is(err, rollback.ErrRolledBack) {
			t.Errorf("read %+v after seeing %+v: %v, want ErrRolledBack", m, seen, err)
		}
	}
	if err := w.Check(seen, registry.Meta{}, false); !errors.Is(err, rollback.ErrRolledBack) {
		t.Errorf("a missing meta after seeing revision 5: %v", err)
	}
	if err := new(rollback.Watermark).Check(rollback.State{}, registry.Meta{}, false); err != nil {
		t.Errorf("a missing meta on a new keyspace: %v", err)
	}
}

// TestRecoveredMetaOnlyRaises: the recovered meta is above what was seen
// in epoch and revision, at least the floor, no earlier than the registry
// time seen (a restore does not set the registry's clock back), and keeps every other field
// of the meta read (the lineage here).
func TestRecoveredMetaOnlyRaises(t *testing.T) {
	read := registry.Meta{Revision: 3, IssuerEpoch: 2, FenceFloor: 9, PolicySeq: 1, Lineage: "L", Time: 1000}
	got := rollback.RecoveredMeta(read, rollback.State{Revision: 10, Epoch: 4, PolicySeq: 2, MaxFence: 50, Time: 5000}, 50)
	want := registry.Meta{Revision: 11, IssuerEpoch: 5, FenceFloor: 50, PolicySeq: 2, Lineage: "L", Time: 5000}
	if got != want {
		t.Fatalf("recovered %+v, want %+v", got, want)
	}
	// Another process already bumped past what this one saw: nothing lowers.
	ahead := registry.Meta{Revision: 20, IssuerEpoch: 7, FenceFloor: 80, PolicySeq: 3, Time: 9000}
	if got := rollback.RecoveredMeta(ahead, rollback.State{Revision: 10, Epoch: 4, Time: 5000}, 50); got.IssuerEpoch != 7 || got.FenceFloor != 80 || got.Revision != 21 || got.PolicySeq != 3 || got.Time != 9000 {
		t.Fatalf("recovered %+v from %+v", got, ahead)
	}
}

// TestCeilingIsOnDiskBeforeTheFence: ReserveUpTo saves a ceiling at or
// above the fence before it returns, and a Watermark loaded from the file
// floors at it.
func TestCeilingIsOnDiskBeforeTheFence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	var w rollback.Watermark
	if err := w.Load(file, 100); err != nil {
		t.Fatal(err)
	}
	if err := w.ReserveUpTo(7); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var st rollback.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ceiling < 7 {
		t.Fatalf("ceiling on disk %d below the fence reserved", st.Ceiling)
	}
	var again rollback.Watermark
	if err := again.Load(file, 100); err != nil {
		t.Fatal(err)
	}
	if f := again.Floor(); f < 7 {
		t.Fatalf("floor after a restart %d, below the fence issued", f)
	}
}

// TestRetryRecoversOnce: a rollback runs the recovery, then the step
// again; a second rollback in a row is an error.
func TestRetryRecoversOnce(t *testing.T) {
	runs, heals := 0, 0
	err := rollback.Retry(func() error {
		runs++
		if runs == 1 {
			return rollback.ErrRolledBack
		}
		return nil
	}, func(error) error { heals++; return nil })
	if err != nil || runs != 2 || heals != 1 {
		t.Fatalf("retry: %v after %d runs, %d recoveries", err, runs, heals)
	}
	err = rollback.Retry(func() error { return rollback.ErrRolledBack }, func(error) error { return nil })
	if !errors.Is(err, registry.ErrBackend) || !errors.Is(err, rollback.ErrRolledBack) {
		t.Fatalf("rolled back twice: %v", err)
	}
}

// TestWatermarkKeepsTheRegistryTime: the watermark holds the highest
// registry time it saw (a later, earlier one does not lower it), and the
// state file carries it across a restart of the process.
func TestWatermarkKeepsTheRegistryTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	var w rollback.Watermark
	if err := w.Load(file, 100); err != nil {
		t.Fatal(err)
	}
	w.Heard(registry.Meta{Revision: 2, IssuerEpoch: 1, Time: 7000}, 0)
	w.Wrote(&registry.Meta{Revision: 3, IssuerEpoch: 1, Time: 3000}, 1)
	if got := w.Snapshot().Time; got != 7000 {
		t.Fatalf("watermark time %d, want 7000", got)
	}
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	var again rollback.Watermark
	if err := again.Load(file, 100); err != nil {
		t.Fatal(err)
	}
	if got := again.Snapshot().Time; got != 7000 {
		t.Fatalf("time loaded from the state file %d, want 7000", got)
	}
}
