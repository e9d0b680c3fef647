package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/atomicfile"
	"github.com/fencegate/fencegate/registry"
)

// DefaultFenceReserve is how far above the highest fence issued a process
// with a StateFile reserves its fence ceiling (Options.FenceReserve).
const DefaultFenceReserve = 1024

// stateSaveInterval bounds how stale the StateFile may get while the
// ceiling does not move: a background flusher saves it when it changed.
const stateSaveInterval = time.Second

// errRolledBack is returned by a step whose meta read found the registry's
// state older than this process has already seen: Redis was restored from
// an older copy, failed over to a lagging replica, or restarted empty.
// Update and View recover (see recover.go) and run the step again.
var errRolledBack = errors.New("registry/redis: the registry's state went back")

// watermark is what this process has seen of the registry's state: the
// highest revision, issuer epoch and policy generation read or written,
// and the highest fence. Redis only ever raises them, except when it
// loses writes, so a meta read below the watermark proves a rollback.
//
// With a state file it also holds a fence ceiling: every fence this
// process hands out is at most the ceiling, and the ceiling is on disk
// (fsynced) before the EXEC that issues a fence above the previous one. A
// process restarted along with a restored Redis then still knows a floor
// above every fence it issued.
type watermark struct {
	mu      sync.Mutex
	state   watermarkState
	file    string
	reserve uint64
	saved   time.Time
	// dirty: the state changed since the last save (flush saves it).
	dirty bool
}

// watermarkState is the state file's content (JSON).
type watermarkState struct {
	Revision  uint64 `json:"revision"`
	Epoch     uint64 `json:"issuerEpoch"`
	PolicySeq uint64 `json:"policySeq"`
	MaxFence  uint64 `json:"maxFence"`
	// Ceiling is at least every fence this process issued (state file
	// only; zero without one).
	Ceiling uint64 `json:"fenceCeiling"`
}

// loadWatermark reads file (a missing file is an empty watermark).
func loadWatermark(file string, reserve uint64) (*watermark, error) {
	w := &watermark{file: file, reserve: reserve}
	if file == "" {
		return w, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry/redis: state file: %w", err)
	}
	if err := json.Unmarshal(b, &w.state); err != nil {
		return nil, fmt.Errorf("registry/redis: state file %s: %w", file, err)
	}
	return w, nil
}

// check compares a meta read from Redis (found=false: no meta key) with
// seen, the watermark as it was before the read was sent, and raises the
// watermark to it; a meta below seen is errRolledBack.
//
// It must be the watermark of before the read: another process's
// announcement heard while the read is on its way (the subscription
// raises the watermark at any time) may be of a write committed after the
// read was served, which the read rightly does not show. Only what was
// heard, read or written before the read was sent is a floor the read
// must reach: those writes committed before it.
func (w *watermark) check(seen watermarkState, m registry.Meta, found bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := seen
	if m.Revision < st.Revision || (!found && st.Revision > 0) ||
		(found && (m.IssuerEpoch < st.Epoch || m.PolicySeq < st.PolicySeq)) {
		return fmt.Errorf("%w: revision %d (meta found: %t), issuer epoch %d, policy generation %d, where this process saw revision %d, epoch %d, generation %d",
			errRolledBack, m.Revision, found, m.IssuerEpoch, m.PolicySeq, st.Revision, st.Epoch, st.PolicySeq)
	}
	w.raise(m)
	return nil
}

// raise lifts the watermark to m (called with mu held).
func (w *watermark) raise(m registry.Meta) {
	if m.Revision > w.state.Revision || m.IssuerEpoch > w.state.Epoch || m.PolicySeq > w.state.PolicySeq {
		w.dirty = true
	}
	w.state.Revision = max(w.state.Revision, m.Revision)
	w.state.Epoch = max(w.state.Epoch, m.IssuerEpoch)
	w.state.PolicySeq = max(w.state.PolicySeq, m.PolicySeq)
}

// seeFence records a fence read or written.
func (w *watermark) seeFence(f uint64) {
	w.mu.Lock()
	if f > w.state.MaxFence {
		w.state.MaxFence, w.dirty = f, true
	}
	w.mu.Unlock()
}

// wrote records what a committed step wrote: its meta (if any) and the
// highest fence of its resources.
func (w *watermark) wrote(m *registry.Meta, fence uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m != nil {
		w.raise(*m)
	}
	if fence > w.state.MaxFence {
		w.state.MaxFence, w.dirty = fence, true
	}
}

// reserveUpTo makes sure the state file's ceiling covers fence before a step
// issuing it is sent, saving the file (fsynced) when it must move. It also
// saves the file when the last save is older than stateSaveInterval, so
// its revision stays recent. Without a state file it does nothing.
func (w *watermark) reserveUpTo(fence uint64) error {
	if w.file == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := clock.Real().Now()
	if fence <= w.state.Ceiling && now.Sub(w.saved) < stateSaveInterval {
		return nil
	}
	if fence > w.state.Ceiling {
		w.state.Ceiling = fence + w.reserve
	}
	return w.saveLocked(now)
}

func (w *watermark) saveLocked(now time.Time) error {
	b, err := json.Marshal(w.state)
	if err != nil {
		return fmt.Errorf("registry/redis: state file: %w", err)
	}
	if err := atomicfile.Write(w.file, b); err != nil {
		return fmt.Errorf("%w: registry/redis: state file: %w", registry.ErrBackend, err)
	}
	w.saved, w.dirty = now, false
	return nil
}

// flush runs until ctx ends: every stateSaveInterval it saves the state
// file if the watermark moved, so the file is at most that stale even
// when no write comes to save it (a crash loses at most that much).
// Without a state file it only waits for ctx.
func (w *watermark) flush(ctx context.Context, log func(error)) {
	if w.file == "" {
		<-ctx.Done()
		return
	}
	t := clock.Real().NewTicker(stateSaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			w.mu.Lock()
			var err error
			if w.dirty {
				err = w.saveLocked(clock.Real().Now())
			}
			w.mu.Unlock()
			if err != nil {
				log(err)
			}
		}
	}
}

// announce is the message a committed write publishes on the state
// channel: "<origin> <revision> <epoch> <policySeq> <maxFence>", with the
// highest fence this process knows of (its own and those announced to it).
func (w *watermark) announce(origin string, m registry.Meta, fence uint64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%s %d %d %d %d", origin, m.Revision, m.IssuerEpoch, m.PolicySeq, max(fence, w.state.MaxFence))
}

// heard raises the watermark to another process's announcement (see
// announce); a malformed one is ignored (the channel is the registry's
// own, but a message only ever raises a watermark, so a bogus one could
// at worst trigger a needless recovery: an epoch bump and a floor).
func (w *watermark) heard(payload string) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return
	}
	var n [4]uint64
	for i := range n {
		v, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return
		}
		n[i] = v
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raise(registry.Meta{Revision: n[0], IssuerEpoch: n[1], PolicySeq: n[2]})
	if n[3] > w.state.MaxFence {
		w.state.MaxFence, w.dirty = n[3], true
	}
}

// save writes the state file now (nothing without one).
func (w *watermark) save() error {
	if w.file == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.saveLocked(clock.Real().Now())
}

// floor is the fence floor a recovery raises to: above every fence this
// process issued (the ceiling) or saw.
func (w *watermark) floor() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.state.Ceiling, w.state.MaxFence)
}

// snapshot returns the watermark's state.
func (w *watermark) snapshot() watermarkState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// recovered lifts the watermark to the meta a recovery wrote and saves
// the state file (if any) at once.
func (w *watermark) recovered(m registry.Meta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state.Revision, w.state.Epoch, w.state.PolicySeq = m.Revision, m.IssuerEpoch, m.PolicySeq
	if w.file == "" {
		return nil
	}
	return w.saveLocked(clock.Real().Now())
}
