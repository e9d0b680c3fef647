package guard

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/fencegate/fencegate/store"
)

// DefaultMaxEntries bounds the checkpoints kept when Options.MaxEntries is
// zero: the least recently used ones are dropped past it.
const DefaultMaxEntries = 4096

// Options configures a guard.
type Options struct {
	// MaxEntries bounds the resources checkpointed (DefaultMaxEntries when
	// zero); the least recently used checkpoint is dropped past it.
	MaxEntries int
}

// Store is a store.Store that checks every Begin of a checkpointed
// resource against its local checkpoint before the inner store decides.
// Methods it does not override go to the inner store unchanged.
type Store struct {
	store.Store
	path string
	max  int

	// stripes serialise the guarded calls of one resource, so that a
	// checkpoint never lags a concurrent call's effect (a Resolve
	// clearing an UNKNOWN while a Begin compares).
	stripes [64]sync.Mutex

	mu sync.Mutex
	f  file
}

// lock takes the stripe of resource and returns its unlock.
func (g *Store) lock(resource string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(resource))
	m := &g.stripes[h.Sum32()%uint32(len(g.stripes))]
	m.Lock()
	return m.Unlock
}

var _ store.Store = (*Store)(nil)

// Wrap returns inner guarded by the checkpoints kept in the file at
// checkpointPath (created on the first change; its directory must exist).
func Wrap(inner store.Store, checkpointPath string) (*Store, error) {
	return WrapOptions(inner, checkpointPath, Options{})
}

// WrapOptions is Wrap with options.
func WrapOptions(inner store.Store, checkpointPath string, opts Options) (*Store, error) {
	if inner == nil {
		return nil, fmt.Errorf("store/guard: nil store")
	}
	if checkpointPath == "" {
		return nil, fmt.Errorf("store/guard: checkpoint path required")
	}
	if opts.MaxEntries < 0 {
		return nil, fmt.Errorf("store/guard: maxEntries must be >= 0")
	}
	f, err := load(checkpointPath)
	if err != nil {
		return nil, err
	}
	m := opts.MaxEntries
	if m == 0 {
		m = DefaultMaxEntries
	}
	return &Store{Store: inner, path: checkpointPath, max: m, f: f}, nil
}

// Unwrap returns the store the guard wraps.
func (g *Store) Unwrap() store.Store { return g.Store }

// Checkpoint returns the checkpoint of resource, if any.
func (g *Store) Checkpoint(resource string) (Checkpoint, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.f.Resources[resource]
	return c, ok
}

// Begin implements store.Store. For a checkpointed resource it reads the
// inner store's record first: a record that shows less than the checkpoint
// (no record, a lower highest fence, a lower last segment under the same
// fence, or an outstanding UNKNOWN forgotten) means the store lost data,
// and the attempt is refused with FENCE_REGRESSION and the resource paused,
// whatever its fence: nothing is ever decided on the lost state.
func (g *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := in.Validate(); err != nil {
		return g.Store.Begin(ctx, in) // the inner store answers bad input
	}
	defer g.lock(in.Resource)()
	if cp, ok := g.Checkpoint(in.Resource); ok {
		rec, err := g.Store.Record(ctx, in.Resource)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.BeginResult{}, fmt.Errorf("store/guard: begin: %w", err)
		}
		if rec.Pause != nil {
			if err := g.update(in.Resource, func(c *Checkpoint) { c.SawPause = true }); err != nil {
				return store.BeginResult{}, err
			}
		} else if cp.SawPause {
			// An operator resumed the resource: adopt the record as it is.
			if err := g.adopt(rec); err != nil {
				return store.BeginResult{}, err
			}
		} else if detail := lost(cp, rec); detail != "" {
			return g.regress(ctx, in, detail)
		}
	}
	res, err := g.Store.Begin(ctx, in)
	if err != nil {
		return res, err
	}
	if res.Decision == store.DecisionProceed || res.Record.Unknown() || res.Record.Pause != nil {
		if err := g.observe(res.Record); err != nil {
			return store.BeginResult{}, err
		}
	}
	return res, nil
}

// regress pauses the resource for a detected loss and answers
// FENCE_REGRESSION; the pause is recorded in the checkpoint too.
func (g *Store) regress(ctx context.Context, in store.BeginInput, detail string) (store.BeginResult, error) {
	rec, err := g.Store.Pause(ctx, store.PauseInput{
		Resource: in.Resource, Reason: store.PauseFenceRegression, Detail: detail, Now: in.Now,
	})
	if err != nil {
		return store.BeginResult{}, fmt.Errorf("store/guard: pause after data loss: %w", err)
	}
	if err := g.update(in.Resource, func(c *Checkpoint) { c.SawPause = true }); err != nil {
		return store.BeginResult{}, err
	}
	return store.BeginResult{Decision: store.DecisionFenceRegression, Detail: detail, Record: rec}, nil
}

// lost compares a record with a checkpoint and describes the loss, or
// returns "" when the record shows at least what the checkpoint saw.
func lost(cp Checkpoint, rec store.Record) string {
	pre := fmt.Sprintf("store lost data: local checkpoint (fence %d, segment %d", cp.Fence, cp.Seq)
	if cp.unknown() {
		pre += fmt.Sprintf(", UNKNOWN mutation fence %d segment %d outstanding", cp.UnknownFence, cp.UnknownSeq)
	}
	pre += ")"
	switch {
	case !rec.Exists():
		return pre + ", the store has no record"
	case rec.HighestFence < cp.Fence:
		return fmt.Sprintf("%s, the store's highest fence is %d", pre, rec.HighestFence)
	case rec.HighestFence == cp.Fence && rec.LastSeq < cp.Seq:
		return fmt.Sprintf("%s, the store's last segment is %d", pre, rec.LastSeq)
	case cp.unknown() && !settled(cp, rec) && !holds(cp, rec):
		return pre + ", the store has no such mutation in flight"
	}
	return ""
}

// settled reports whether rec shows the checkpoint's unknown mutation
// settled as applied or overtaken: a higher fence, or its segment committed.
func settled(cp Checkpoint, rec store.Record) bool {
	return rec.HighestFence > cp.UnknownFence || (rec.HighestFence == cp.UnknownFence && rec.LastSeq >= cp.UnknownSeq)
}

// holds reports whether rec still carries the checkpoint's unknown
// mutation (UNKNOWN, or IN_FLIGHT from before it was declared unknown:
// its deadline still guards it).
func holds(cp Checkpoint, rec store.Record) bool {
	m := rec.InFlight
	return m != nil && m.Fence == cp.UnknownFence && m.Seq == cp.UnknownSeq
}

// Commit implements store.Store and checkpoints the committed segment.
func (g *Store) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	defer g.lock(in.Resource)()
	r, err := g.Store.Commit(ctx, in)
	if err != nil {
		return r, err
	}
	return r, g.update(r.Resource, func(c *Checkpoint) {
		raise(c, r.Fence, r.Seq)
		if c.UnknownFence == r.Fence && c.UnknownSeq == r.Seq {
			c.UnknownFence, c.UnknownSeq = 0, 0
		}
	})
}

// MarkUnknown implements store.Store and checkpoints the UNKNOWN mutation.
func (g *Store) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	defer g.lock(in.Resource)()
	m, err := g.Store.MarkUnknown(ctx, in)
	if err != nil {
		return m, err
	}
	return m, g.update(m.Resource, func(c *Checkpoint) {
		raise(c, m.Fence, 0)
		c.UnknownFence, c.UnknownSeq = m.Fence, m.Seq
	})
}

// Resolve implements store.Store; the settled mutation is no longer
// outstanding.
func (g *Store) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	defer g.lock(in.Resource)()
	r, err := g.Store.Resolve(ctx, in)
	if err != nil {
		return r, err
	}
	return r, g.update(in.Resource, func(c *Checkpoint) {
		if c.UnknownFence == in.Fence && c.UnknownSeq == in.Seq {
			c.UnknownFence, c.UnknownSeq = 0, 0
		}
		raise(c, r.Record.HighestFence, r.Record.LastSeq)
	})
}

// Abort implements store.Store.
func (g *Store) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	defer g.lock(in.Resource)()
	r, err := g.Store.Abort(ctx, in)
	if err != nil {
		return r, err
	}
	return r, g.update(in.Resource, func(c *Checkpoint) {
		if c.UnknownFence == in.Fence && c.UnknownSeq == in.Seq {
			c.UnknownFence, c.UnknownSeq = 0, 0
		}
		raise(c, r.HighestFence, r.LastSeq)
	})
}

// Resume implements store.Store: the operator's resume is the
// acknowledgement of the record as it now is, which the checkpoint adopts.
func (g *Store) Resume(ctx context.Context, resource string) (store.Record, error) {
	defer g.lock(resource)()
	r, err := g.Store.Resume(ctx, resource)
	if err != nil {
		return r, err
	}
	return r, g.adopt(r)
}

// raise moves c up to (fence, seq), never down.
func raise(c *Checkpoint, fence, seq uint64) {
	switch {
	case fence > c.Fence:
		c.Fence, c.Seq = fence, seq
	case fence == c.Fence && seq > c.Seq:
		c.Seq = seq
	}
}

// observe raises the checkpoint of rec's resource to what rec shows.
func (g *Store) observe(rec store.Record) error {
	if !rec.Exists() {
		return nil
	}
	return g.update(rec.Resource, func(c *Checkpoint) {
		raise(c, rec.HighestFence, rec.LastSeq)
		if rec.Unknown() {
			c.UnknownFence, c.UnknownSeq = rec.InFlight.Fence, rec.InFlight.Seq
		} else if c.unknown() && settled(*c, rec) {
			c.UnknownFence, c.UnknownSeq = 0, 0
		}
		if rec.Pause != nil {
			c.SawPause = true
		}
	})
}

// adopt replaces the checkpoint of rec's resource with what rec shows (an
// operator's resume acknowledged it).
func (g *Store) adopt(rec store.Record) error {
	if !rec.Exists() {
		return nil
	}
	return g.update(rec.Resource, func(c *Checkpoint) {
		*c = Checkpoint{Fence: rec.HighestFence, Seq: rec.LastSeq}
		if rec.Unknown() {
			c.UnknownFence, c.UnknownSeq = rec.InFlight.Fence, rec.InFlight.Seq
		}
		c.SawPause = rec.Pause != nil
	})
}

// update applies f to the checkpoint of resource (a new one if none) and
// saves the file if it changed, dropping the least recently used
// checkpoint past the bound.
func (g *Store) update(resource string, f func(*Checkpoint)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, had := g.f.Resources[resource]
	c := old
	f(&c)
	c.Touched = old.Touched
	if had && c == old {
		return nil
	}
	g.f.Clock++
	c.Touched = g.f.Clock
	g.f.Resources[resource] = c
	for len(g.f.Resources) > g.max {
		var oldest string
		var t uint64
		for r, e := range g.f.Resources {
			if oldest == "" || e.Touched < t {
				oldest, t = r, e.Touched
			}
		}
		delete(g.f.Resources, oldest)
	}
	if err := save(g.path, g.f); err != nil {
		// Keep memory as it was: the next change writes everything again.
		if had {
			g.f.Resources[resource] = old
		} else {
			delete(g.f.Resources, resource)
		}
		return err
	}
	return nil
}
