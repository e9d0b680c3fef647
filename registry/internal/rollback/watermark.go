package rollback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/atomicfile"
	"github.com/fencegate/fencegate/registry"
)

// DefaultFenceReserve is how far above the highest fence issued a process
// with a state file reserves its fence ceiling.
const DefaultFenceReserve = 1024

// SaveInterval bounds how stale the state file may get while the ceiling
// does not move: Flush saves it when it changed.
const SaveInterval = time.Second

// ErrRolledBack is returned by Check for a meta below what the process
// had already seen: the store went back (restored from an older copy,
// failed over to a lagging replica, emptied). The backends recover from
// it (Retry) and run the step again.
var ErrRolledBack = errors.New("registry/rollback: the registry's state went back")

// Watermark is what a process has seen of the registry's state: the
// highest revision, issuer epoch and policy generation read or written,
// and the highest fence. The store only ever raises them, except when it
// loses writes, so a meta read below the watermark proves a rollback.
//
// With a state file it also holds a fence ceiling: every fence the
// process hands out is at most the ceiling, and the ceiling is on disk
// (fsynced) before the transaction that issues a fence above the previous
// one. A process restarted along with a restored store then still knows a
// floor above every fence it issued.
//
// The zero Watermark keeps no file; Load gives it one.
type Watermark struct {
	mu      sync.Mutex
	state   State
	file    string
	reserve uint64
	saved   time.Time
	// dirty: the state changed since the last save (Flush saves it).
	dirty bool
}

// Load makes w keep its state in file ("" for memory only), reserving
// fence ceilings reserve above the highest fence issued
// (DefaultFenceReserve when zero), and reads the file (a missing file is
// an empty state). Call it before w is used.
func (w *Watermark) Load(file string, reserve uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if reserve == 0 {
		reserve = DefaultFenceReserve
	}
	w.file, w.reserve = file, reserve
	if file == "" {
		return nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("registry/rollback: state file: %w", err)
	}
	if err := json.Unmarshal(b, &w.state); err != nil {
		return fmt.Errorf("registry/rollback: state file %s: %w", file, err)
	}
	return nil
}

// Check compares a meta read from the store (found=false: no meta) with
// seen, the watermark as it was before the read was sent, and raises the
// watermark to it; a meta below seen is ErrRolledBack.
//
// It must be the watermark of before the read: a write of another process
// learnt while the read is on its way (an announcement, a concurrent
// step's read) may have committed after the read was served, which the
// read rightly does not show. Only what was seen before the read was sent
// is a floor the read must reach: those writes committed before it.
func (w *Watermark) Check(seen State, m registry.Meta, found bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := seen
	if m.Revision < st.Revision || (!found && (st.Revision > 0 || st.Epoch > 0)) ||
		(found && (m.IssuerEpoch < st.Epoch || m.PolicySeq < st.PolicySeq)) {
		return fmt.Errorf("%w: revision %d (meta found: %t), issuer epoch %d, policy generation %d, where this process saw revision %d, epoch %d, generation %d",
			ErrRolledBack, m.Revision, found, m.IssuerEpoch, m.PolicySeq, st.Revision, st.Epoch, st.PolicySeq)
	}
	w.raise(m)
	return nil
}

// raise lifts the watermark to m (called with mu held).
func (w *Watermark) raise(m registry.Meta) {
	if m.Revision > w.state.Revision || m.IssuerEpoch > w.state.Epoch || m.PolicySeq > w.state.PolicySeq {
		w.dirty = true
	}
	w.state.Time = max(w.state.Time, m.Time)
	w.state.Revision = max(w.state.Revision, m.Revision)
	w.state.Epoch = max(w.state.Epoch, m.IssuerEpoch)
	w.state.PolicySeq = max(w.state.PolicySeq, m.PolicySeq)
}

// raiseFence lifts the highest fence to f (called with mu held).
func (w *Watermark) raiseFence(f uint64) {
	if f > w.state.MaxFence {
		w.state.MaxFence, w.dirty = f, true
	}
}

// SeeFence records a fence read.
func (w *Watermark) SeeFence(f uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raiseFence(f)
}

// Wrote records what a committed step wrote: its meta (if any) and the
// highest fence of its resources.
func (w *Watermark) Wrote(m *registry.Meta, fence uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m != nil {
		w.raise(*m)
	}
	w.raiseFence(fence)
}

// Heard raises the watermark to a state another process reached (its
// meta and the highest fence it knew of): it only ever raises.
func (w *Watermark) Heard(m registry.Meta, fence uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raise(m)
	w.raiseFence(fence)
}

// ReserveUpTo makes sure the state file's ceiling covers fence before a
// step issuing it is sent, saving the file (fsynced) when it must move. It
// also saves the file when the last save is older than SaveInterval, so
// its revision stays recent. Without a state file it does nothing.
func (w *Watermark) ReserveUpTo(fence uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == "" {
		return nil
	}
	now := clock.Real().Now()
	if fence <= w.state.Ceiling && now.Sub(w.saved) < SaveInterval {
		return nil
	}
	if fence > w.state.Ceiling {
		w.state.Ceiling = fence + w.reserve
	}
	return w.saveLocked(now)
}

func (w *Watermark) saveLocked(now time.Time) error {
	b, err := json.Marshal(w.state)
	if err != nil {
		return fmt.Errorf("registry/rollback: state file: %w", err)
	}
	if err := atomicfile.Write(w.file, b); err != nil {
		return fmt.Errorf("%w: registry/rollback: state file: %w", registry.ErrBackend, err)
	}
	w.saved, w.dirty = now, false
	return nil
}

// Flush runs until ctx ends: every SaveInterval it saves the state file if
// the watermark moved, so the file is at most that stale even when no
// write comes to save it (a crash loses at most that much). A failed save
// is passed to log. Without a state file it only waits for ctx.
func (w *Watermark) Flush(ctx context.Context, log func(error)) {
	if w.fileName() == "" {
		<-ctx.Done()
		return
	}
	t := clock.Real().NewTicker(SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := w.saveIfDirty(); err != nil {
				log(err)
			}
		}
	}
}

func (w *Watermark) fileName() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.file
}

func (w *Watermark) saveIfDirty() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty {
		return nil
	}
	return w.saveLocked(clock.Real().Now())
}

// Save writes the state file now (nothing without one).
func (w *Watermark) Save() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == "" {
		return nil
	}
	return w.saveLocked(clock.Real().Now())
}

// Floor is the fence floor a recovery raises to: above every fence this
// process issued (the ceiling) or saw.
func (w *Watermark) Floor() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.state.Ceiling, w.state.MaxFence)
}

// Snapshot returns the watermark's state.
func (w *Watermark) Snapshot() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// Recovered lifts the watermark to the meta a recovery wrote and saves
// the state file (if any) at once.
func (w *Watermark) Recovered(m registry.Meta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state.Revision, w.state.Epoch, w.state.PolicySeq = m.Revision, m.IssuerEpoch, m.PolicySeq
	w.state.Time = max(w.state.Time, m.Time)
	w.dirty = true
	if w.file == "" {
		return nil
	}
	return w.saveLocked(clock.Real().Now())
}
