package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/store"
	storemem "github.com/fencegate/fencegate/store/memory"
)

// sharedStore is the fenced store every replica of a round shares, on
// store/memory (memShared, the default) or store/postgres (pgShared,
// Options.Postgres), which a store loss (FaultStoreLoss) empties or puts
// back to a saved state under the running sidecars. Its store.Store is the
// round's own view of the data (the oracle's and the operator's reads):
// no generation check, at the round's clock.
type sharedStore interface {
	store.Store
	// process opens a new sidecar process's handle on the store (its calls
	// decided at the round's clock) and the check of the generation marker
	// its anchor tells it to expect.
	process() (store.Store, generationCheck, error)
	// save keeps a copy of the state now (a backup, an RDB).
	save() error
	// saved reports whether a save was kept.
	saved() bool
	// lose empties the store (a Redis restarted without persistence, a new
	// pod on an empty disk: another generation), or with restore and a
	// save puts the saved state back, its generation included.
	lose(restore bool) error
	// close releases the store (a database schema is dropped).
	close() error
}

// newSharedStoreOf is round seed's shared store: on the run's PostgreSQL
// when it has one, else on store/memory.
func newSharedStoreOf(m *materials, clk simClock, seed uint64) (sharedStore, error) {
	if m.pg != nil {
		return newPGShared(m.pg, clk, seed)
	}
	return newMemShared(clk, seed), nil
}

// generationCheck is a process store's check of the generation marker
// (store/anchor calls the first three); enter runs before every call, and
// explain on every call's error.
type generationCheck interface {
	ExpectGeneration(ctx context.Context, gen string) error
	GenerationLoss() error
	CheckGeneration(ctx context.Context) error
	enter() error
	// explain words a loss the store detected as markerCheck does, keeping
	// the store's own error to match (errors.Is), so that the history of a
	// seed does not depend on the backend's wording; other errors are
	// returned as they are.
	explain(err error) error
}

// generationOf is the marker of a round's data set: gen<n> after n losses.
func generationOf(seed uint64, losses int) string { return fmt.Sprintf("sim%016xg%d", seed, losses) }

// serverTime makes every transition of the store decide at the round's
// virtual clock (the registry's), whatever the caller's clock says.
//
// A store shared by replicas is, in production, a Redis or a PostgreSQL,
// which decides every transition at the server's clock (store/redis's
// TIME, store/postgres's clock_timestamp()): a Begin's Now becomes the
// server's time and its Deadline and QuietAt that plus the windows the
// sidecar asked for, and the other calls take the server's time for their
// Now, so a marker written by one replica expires and becomes quiet at the
// same moment for all of them whatever their clocks. serverTime does the
// same with the round's virtual clock (store/postgres runs with
// CallerClock, deciding at the Now it is given): the sidecars' clock
// offsets then matter where they do in production.
type serverTime struct {
	store.Store
	clk simClock
}

func (s serverTime) now() time.Time { return s.clk.Now() }

func (s serverTime) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	srv := s.now()
	window := in.Deadline.Sub(in.Now)
	if !in.QuietAt.IsZero() {
		in.QuietAt = srv.Add(in.QuietAt.Sub(in.Now))
	}
	in.Now, in.Deadline = srv, srv.Add(window)
	return s.Store.Begin(ctx, in)
}
func (s serverTime) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	in.Now = s.now()
	return s.Store.Commit(ctx, in)
}
func (s serverTime) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	in.Now = s.now()
	return s.Store.MarkUnknown(ctx, in)
}
func (s serverTime) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	in.Now = s.now() // the evidence is placed at the server's time minus its age
	return s.Store.Resolve(ctx, in)
}
func (s serverTime) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	in.Now = s.now()
	return s.Store.Abort(ctx, in)
}
func (s serverTime) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	in.Now = s.now()
	return s.Store.Pause(ctx, in)
}
func (s serverTime) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	in.Now = s.now()
	return s.Store.Repair(ctx, in)
}
func (s serverTime) ListUnknown(ctx context.Context, _ time.Time) ([]store.Mutation, error) {
	return s.Store.ListUnknown(ctx, s.now())
}
func (s serverTime) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	in.Now = s.now()
	return s.Store.Compact(ctx, in)
}

// memShared is the shared store on one store/memory, whose snapshots a
// loss restores.
type memShared struct {
	serverTime
	mem    *storemem.Store
	snap   *storemem.Snapshot
	seed   uint64
	losses int
}

func newMemShared(clk simClock, seed uint64) *memShared {
	m := storemem.New(storemem.Options{Generation: generationOf(seed, 0)})
	return &memShared{serverTime: serverTime{Store: m, clk: clk}, mem: m, seed: seed}
}

func (s *memShared) process() (store.Store, generationCheck, error) {
	return s.serverTime, &markerCheck{read: s.generation}, nil
}

func (s *memShared) save() error {
	s.snap = s.mem.Snapshot()
	return nil
}

func (s *memShared) saved() bool { return s.snap != nil }

func (s *memShared) lose(restore bool) error {
	if restore && s.snap != nil {
		s.mem.Restore(s.snap)
		return nil
	}
	s.losses++
	s.mem.Restore(storemem.New(storemem.Options{Generation: generationOf(s.seed, s.losses)}).Snapshot())
	return nil
}

func (s *memShared) close() error { return s.mem.Close() }

// generation is the store's generation marker now.
func (s *memShared) generation() string {
	g, _ := s.mem.Generation(context.Background())
	return g
}

// errGenerationChanged is what a process's store on store/memory answers
// once the shared store's generation is not the one it expects, as
// store/redis does when its generation marker changed (Redis restarted
// empty).
var errGenerationChanged = errors.New("sim: the fenced store's generation changed (it lost its data)")

// markerCheck is the generation check of a process's store on
// store/memory, store/redis's marker check: the marker read at every call.
type markerCheck struct {
	read func() string
	// expected is the generation the anchor told the process to expect
	// ("" before), lost the change it saw.
	expected string
	lost     error
}

func (c *markerCheck) ExpectGeneration(_ context.Context, gen string) error {
	c.expected, c.lost = gen, nil
	return c.enter()
}

func (c *markerCheck) GenerationLoss() error { return c.lost }

func (c *markerCheck) CheckGeneration(context.Context) error { return c.enter() }

func (c *markerCheck) explain(err error) error { return err }

func (c *markerCheck) enter() error {
	if c.lost != nil {
		return c.lost
	}
	if c.expected == "" {
		return nil
	}
	if g := c.read(); g != c.expected {
		c.lost = fmt.Errorf("%w: %s, expected %s", errGenerationChanged, g, c.expected)
	}
	return c.lost
}
