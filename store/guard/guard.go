package guard

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"go.etcd.io/bbolt"

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
	// ImportJSON names a JSON checkpoint file of an earlier version
	// (rewritten whole on every change) to import at Wrap: its checkpoints
	// are merged into the checkpoint file, then it is renamed with
	// ImportedSuffix. A missing file is nothing to import; a corrupt one
	// fails Wrap.
	ImportJSON string
}

// Counters are counters of a checkpoint file since it was opened in this
// process (shared by the guards that name it).
type Counters struct {
	// Writes counts checkpoint changes committed.
	Writes uint64
	// TxCommits counts committed bbolt write transactions: concurrent
	// changes share one, and its fsyncs.
	TxCommits uint64
}

// Store is a store.Store that checks every Begin of a checkpointed
// resource against its local checkpoint before the inner store decides.
// Methods it does not override go to the inner store unchanged.
type Store struct {
	store.Store
	d   *checkpointDB
	max int

	// stripes serialise the guarded calls of one resource, so that a
	// checkpoint never lags a concurrent call's effect (a Resolve
	// clearing an UNKNOWN while a Begin compares).
	stripes [nStripes]sync.Mutex

	mu     sync.RWMutex // checkpoint reads and writes hold R; Close takes W
	closed bool
}

// lock takes the stripe of resource and returns its unlock.
func (g *Store) lock(resource string) func() {
	m := &g.stripes[stripe(resource)]
	m.Lock()
	return m.Unlock
}

// nStripes is the number of stripes serialising calls by resource.
const nStripes = 64

// stripe returns the index of resource's stripe.
func stripe(resource string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(resource))
	return h.Sum32() % nStripes
}

var _ store.Store = (*Store)(nil)

// Wrap returns inner guarded by the checkpoints kept in the bbolt file at
// checkpointPath (created if missing; its directory must exist). Guards of
// one process that name the same file share it.
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
	m := opts.MaxEntries
	if m == 0 {
		m = DefaultMaxEntries
	}
	d, err := openDB(checkpointPath)
	if err != nil {
		return nil, err
	}
	if opts.ImportJSON != "" {
		if err := importLegacy(d, opts.ImportJSON, m); err != nil {
			_ = d.release()
			return nil, err
		}
	}
	return &Store{Store: inner, d: d, max: m}, nil
}

// Unwrap returns the store the guard wraps.
func (g *Store) Unwrap() store.Store { return g.Store }

// Close closes the inner store and releases the checkpoint file.
func (g *Store) Close() error {
	err := g.Store.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return err
	}
	g.closed = true
	return errors.Join(err, g.d.release())
}

// Counters returns the counters of the checkpoint file.
func (g *Store) Counters() Counters {
	writes, txs := g.d.group.Stats()
	return Counters{Writes: writes, TxCommits: txs}
}

// Checkpoint returns the checkpoint of resource, if any (none if it cannot
// be read: Begin then fails).
func (g *Store) Checkpoint(resource string) (Checkpoint, bool) {
	c, ok, err := g.checkpoint(resource)
	return c, ok && err == nil
}

// checkpoint reads the checkpoint of resource.
func (g *Store) checkpoint(resource string) (c Checkpoint, ok bool, err error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return Checkpoint{}, false, store.ErrClosed
	}
	err = g.d.db.View(func(tx *bbolt.Tx) error {
		c, ok, err = get(tx, resource)
		return err
	})
	return c, ok, errClosedDB(err)
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
	cp, ok, err := g.checkpoint(in.Resource)
	if err != nil {
		return store.BeginResult{}, fmt.Errorf("store/guard: begin: %w", err)
	}
	if ok {
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
			return g.regress(ctx, in, detail, rec)
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
func (g *Store) regress(ctx context.Context, in store.BeginInput, detail string, prior store.Record) (store.BeginResult, error) {
	rec, err := g.Store.Pause(ctx, store.PauseInput{
		Resource: in.Resource, Reason: store.PauseFenceRegression, Detail: detail, Now: in.Now,
	})
	if err != nil {
		return store.BeginResult{}, fmt.Errorf("store/guard: pause after data loss: %w", err)
	}
	if err := g.update(in.Resource, func(c *Checkpoint) { c.SawPause = true }); err != nil {
		return store.BeginResult{}, err
	}
	return store.BeginResult{Decision: store.DecisionFenceRegression, Detail: detail, Record: rec, Prior: prior}, nil
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

// Repair implements store.Store: the record raised to its outside anchor
// (and paused) is what the checkpoint observes, so it never lags it.
func (g *Store) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	defer g.lock(in.Resource)()
	r, err := g.Store.Repair(ctx, in)
	if err != nil {
		return r, err
	}
	return r, g.observe(r)
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

// update applies f to the checkpoint of resource (a new one if none) and,
// if that changes it, writes it durably before returning, dropping the
// least recently used checkpoint past the bound. The comparison runs in a
// read-only transaction first, so a call that changes nothing costs no
// fsync; a change is applied again on the latest state inside the group
// transaction, whose fsyncs it shares with concurrent changes.
func (g *Store) update(resource string, f func(*Checkpoint)) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return store.ErrClosed
	}
	changed := true
	err := g.d.db.View(func(tx *bbolt.Tx) error {
		old, had, err := get(tx, resource)
		if err != nil {
			return err
		}
		c := old
		f(&c)
		changed = !had || c != old
		return nil
	})
	if err != nil {
		return fmt.Errorf("store/guard: read checkpoint: %w", errClosedDB(err))
	}
	if !changed {
		return nil
	}
	if err := g.d.group.Do(func(tx *bbolt.Tx) error { return put(tx, resource, f, g.max) }); err != nil {
		return fmt.Errorf("store/guard: write checkpoint: %w", err)
	}
	return nil
}
