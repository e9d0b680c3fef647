package anchor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// Store is a store.Store whose progress is anchored at the registry (see
// the package comment). Make it with Wrap, then Open it; Run rechecks a
// lost store.
type Store struct {
	inner store.Store
	reg   Registry
	opt   Options
	log   *zap.Logger
	clk   clock.Clock
	m     *metrics
	b     batcher

	openMu sync.Mutex // Open and Recheck, one at a time; guards upgrade

	mu        sync.Mutex
	phase     phase
	gen       string // the generation sent with every anchor request
	lineage   string // the registry's lineage at the registration
	why       error  // why writes are refused (phaseLost, phaseReopen)
	lost      error  // while phaseLost: why wrapped in ErrStoreLost, made once by setLost
	presented string // the generation the store presented when lost
	ledger    []fencegate.LedgerEntry
	upgrade   *Upgrade // not taken into account yet
	wake      chan struct{}
}

// phase is the wrapper's state.
type phase int

const (
	// phaseClosed: before Open; writes refused.
	phaseClosed phase = iota
	// phaseReady: the store's generation is the anchored one: writes are
	// anchored.
	phaseReady
	// phaseLost: the registry anchored another generation (STORE_LOST) or
	// the store reported its generation changed: writes refused until the
	// registry anchors the store's generation again (an acknowledgement)
	// and the store is repaired.
	phaseLost
	// phaseReopen: the registry forgot the store or was replaced (another
	// lineage): writes refused until it is registered and seeded again.
	phaseReopen
)

var _ store.Store = (*Store)(nil)

// Wrap returns inner with its progress anchored at reg. It starts nothing
// and calls nothing: Open registers the store.
func Wrap(inner store.Store, reg Registry, opts Options) (*Store, error) {
	if inner == nil || reg == nil {
		return nil, errors.New("store/anchor: a store and a registry are required")
	}
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.OnRegistryTime != nil {
		reg = timedRegistry{Registry: reg, observe: opts.OnRegistryTime}
	}
	w := &Store{inner: inner, reg: reg, opt: opts, log: opts.Logger.With(zap.String("store", opts.Store)), clk: opts.Clock,
		wake: make(chan struct{}, 1)}
	if opts.Upgrade.Generation != "" || len(opts.Upgrade.Checkpoints) > 0 || opts.Upgrade.Done != nil {
		u := opts.Upgrade
		w.upgrade = &u
	}
	m, err := newMetrics(opts.Metrics, func() float64 {
		if w.Lost() != nil {
			return 1
		}
		return 0
	})
	if err != nil {
		return nil, fmt.Errorf("store/anchor: metrics: %w", err)
	}
	w.m = m
	w.b.send = w.send
	return w, nil
}

// Unwrap returns the wrapped store.
func (w *Store) Unwrap() store.Store { return w.inner }

// Name is the store's name at the registry.
func (w *Store) Name() string { return w.opt.Store }

// state returns the phase, the generation and why writes are refused.
func (w *Store) state() (phase, string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase, w.gen, w.why
}

// writable returns nil in phaseReady, else the error writes are refused
// with.
func (w *Store) writable() error {
	ph, why, lost := w.refusal()
	switch ph {
	case phaseReady:
		return nil
	case phaseLost:
		return lost
	case phaseReopen:
		return fmt.Errorf("%w: %w", ErrNotAnchored, why)
	}
	return ErrNotOpen
}

// Lost returns the loss (wrapping ErrStoreLost) while the store is lost,
// else nil.
func (w *Store) Lost() error {
	if ph, _, lost := w.refusal(); ph == phaseLost {
		return lost
	}
	return nil
}

// refusal returns the phase, why writes are refused and the loss (set in
// phaseLost).
func (w *Store) refusal() (phase, error, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase, w.why, w.lost
}

// LossReport is what an operator needs about a loss: the store's name, the
// generation anchored at the registry (as this sidecar registered it) and
// the one the store presents now.
type LossReport struct {
	Store      string `json:"store"`
	Lost       bool   `json:"lost"`
	Generation string `json:"generation,omitempty"`
	Presented  string `json:"presented,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Report describes the wrapper's state for operators.
func (w *Store) Report() LossReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := LossReport{Store: w.opt.Store, Lost: w.phase == phaseLost, Generation: w.gen, Presented: w.presented}
	if w.why != nil && w.phase != phaseReady {
		r.Detail = w.why.Error()
	}
	return r
}

// setLost puts the wrapper in phaseLost (presented: the generation the
// store presents) and wakes Run.
func (w *Store) setLost(presented string, why error) {
	w.mu.Lock()
	first := w.phase != phaseLost
	w.phase, w.why = phaseLost, why
	w.lost = fmt.Errorf("%w: %w", ErrStoreLost, why)
	if presented != "" {
		w.presented = presented
	}
	w.mu.Unlock()
	if first {
		w.m.losses.WithLabelValues("generation").Inc()
		w.log.Error("fenced store LOST: its generation is not the one the registry anchored; every write is refused (STORE_UNAVAILABLE) until an operator acknowledges the loss at the registry (fencegate store acknowledge-loss)",
			zap.String("presented", presented), zap.Error(why))
	}
	w.poke()
}

// setReopen puts a ready wrapper in phaseReopen and wakes Run.
func (w *Store) setReopen(why error) {
	w.mu.Lock()
	changed := w.phase == phaseReady
	if changed {
		w.phase, w.why = phaseReopen, why
	}
	w.mu.Unlock()
	if changed {
		w.log.Warn("the registry forgot this store or was replaced: writes are refused until it is registered and seeded again", zap.Error(why))
		w.poke()
	}
}

func (w *Store) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// noteInner looks at an error of the inner store: a store that reports its
// generation changed (store/redis after Redis lost its data) makes the
// wrapper lost.
func (w *Store) noteInner(err error) {
	if err == nil {
		return
	}
	if gl, ok := w.inner.(interface{ GenerationLoss() error }); ok {
		if loss := gl.GenerationLoss(); loss != nil {
			w.setLost("", loss)
		}
	}
}

// CheckLoss is the readiness check: the loss while lost, the store's own
// generation check where it has one (store/redis reads its marker), else
// nil. It never calls the registry, and a registry being re-seeded does
// not fail it (a registry's trouble must not make every pod unready).
func (w *Store) CheckLoss(ctx context.Context) error {
	if err := w.Lost(); err != nil {
		return err
	}
	if cg, ok := w.inner.(interface{ CheckGeneration(context.Context) error }); ok {
		if err := cg.CheckGeneration(ctx); err != nil {
			w.noteInner(err)
			return err
		}
	}
	return nil
}

// now is the wrapper's clock.
func (w *Store) now() time.Time { return w.clk.Now() }

// Reads, receipts, compaction and trust pins pass through: the anchor
// guards what the store accepted, and those change none of it.

func (w *Store) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	r, err := w.inner.Commit(ctx, in)
	w.noteInner(err)
	return r, err
}

func (w *Store) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	m, err := w.inner.MarkUnknown(ctx, in)
	w.noteInner(err)
	return m, err
}

func (w *Store) Record(ctx context.Context, resource string) (store.Record, error) {
	return w.inner.Record(ctx, resource)
}

func (w *Store) Receipt(ctx context.Context, key store.ReceiptKey) (store.Receipt, error) {
	return w.inner.Receipt(ctx, key)
}

func (w *Store) ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]store.Receipt, error) {
	return w.inner.ReceiptsByOperation(ctx, resource, operationID)
}

func (w *Store) ReceiptsOf(ctx context.Context, q store.ReceiptsQuery) ([]store.Receipt, error) {
	return w.inner.ReceiptsOf(ctx, q)
}

func (w *Store) ReceiptByID(ctx context.Context, resource, id string) (store.Receipt, error) {
	return w.inner.ReceiptByID(ctx, resource, id)
}

func (w *Store) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	return w.inner.ListUnknown(ctx, now)
}

func (w *Store) ListPaused(ctx context.Context) ([]store.Record, error) {
	return w.inner.ListPaused(ctx)
}

func (w *Store) ListQuarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	return w.inner.ListQuarantined(ctx, resource)
}

func (w *Store) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	return w.inner.Records(ctx, q)
}

func (w *Store) Generation(ctx context.Context) (string, error) { return w.inner.Generation(ctx) }

func (w *Store) TrustedKeys(ctx context.Context) ([]store.TrustedKey, error) {
	return w.inner.TrustedKeys(ctx)
}

func (w *Store) RecordTrust(ctx context.Context, in store.TrustInput) ([]store.TrustedKey, error) {
	return w.inner.RecordTrust(ctx, in)
}

func (w *Store) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	return w.inner.Compact(ctx, in)
}

func (w *Store) Stats(ctx context.Context) (store.Stats, error) { return w.inner.Stats(ctx) }

// Close closes the wrapped store (call it after Run returned).
func (w *Store) Close() error {
	w.mu.Lock()
	w.phase = phaseClosed
	w.mu.Unlock()
	return w.inner.Close()
}
