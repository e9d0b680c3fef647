package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/postgres"
	"github.com/fencegate/fencegate/store/postgres/pgsnap"
)

// pgRun is a run's PostgreSQL (Options.Postgres): the pool every round's
// store is on, the run's name, which keeps its schemas apart from another
// run's on the same database, and its schemas. A round takes a schema no
// other round is using (made and migrated when none is free), empties
// it, and gives it back at its end: migrating a schema per round would be
// a third of a round's time. The run drops them all at its end.
type pgRun struct {
	pool *pgxpool.Pool
	name string
	mu   sync.Mutex
	made int      // schemas made
	free []string // schemas no round is using
}

// take returns a schema for a round: a free one, or a new name.
func (p *pgRun) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	p.made++
	return fmt.Sprintf("sim_%s_%d", p.name, p.made)
}

// give hands a round's schema back for the next round.
func (p *pgRun) give(schema string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, schema)
}

// pgStatementTimeout bounds a statement of the simulation's sessions: a
// database that stops answering fails the run instead of hanging it.
const pgStatementTimeout = "60000" // ms

// openPostgres connects a pool of conns connections to dsn (one per
// worker: a round's calls run one at a time) and checks it answers.
func openPostgres(ctx context.Context, dsn string, conns int) (*pgRun, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: the DSN does not parse", ErrOptions)
	}
	cfg.MaxConns = int32(max(conns, 1))
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = pgStatementTimeout
	// A commit need not wait for its WAL flush: the simulation never
	// crashes the database server (its losses are pgsnap's), and a flush
	// per transaction would be most of a round's time.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: %w", ErrSetup, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: postgres: %w", ErrSetup, err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &pgRun{pool: pool, name: hex.EncodeToString(b)}, nil
}

// close drops the run's schemas and closes the pool.
func (p *pgRun) close() error {
	defer p.pool.Close()
	var err error
	for i := 1; i <= p.made; i++ {
		schema := fmt.Sprintf("sim_%s_%d", p.name, i)
		for _, q := range []string{schema, schema + "_saved"} {
			_, derr := p.pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{q}.Sanitize()+` CASCADE`)
			if err == nil && derr != nil {
				err = fmt.Errorf("%w: postgres: drop schema %s: %w", ErrSetup, q, derr)
			}
		}
	}
	return err
}

// pgShared is the shared store on store/postgres, in a schema of the
// round's own while it runs (pgRun.take): every sidecar process opens a
// postgres.Store of its own over it (CallerClock, under serverTime),
// whose own generation check (the marker read in every transaction) is
// what catches a loss. A save copies the schema's data tables to a backup
// schema, a loss empties them with a new generation marker or copies the
// saved rows back (pgsnap).
type pgShared struct {
	serverTime
	run            *pgRun
	pool           *pgxpool.Pool
	schema, backup string
	seed           uint64
	losses         int
	hasSave        bool
	stores         []*postgres.Store
}

// newPGShared gives round seed a schema, emptied, with the data set's
// first generation marker: the same one store/memory starts with, so
// that both backends give a seed the same history. A save of an earlier
// round left in its backup schema is never restored (hasSave).
func newPGShared(run *pgRun, clk simClock, seed uint64) (*pgShared, error) {
	s := &pgShared{run: run, pool: run.pool, seed: seed, schema: run.take()}
	s.backup = s.schema + "_saved"
	own, err := s.open()
	if err != nil {
		return nil, err
	}
	s.serverTime = serverTime{Store: own, clk: clk}
	if err := pgsnap.Empty(context.Background(), s.pool, s.schema, generationOf(seed, 0)); err != nil {
		_ = s.close()
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return s, nil
}

// open opens a store over the round's schema (migrating it the first
// time), closed with the round.
func (s *pgShared) open() (*postgres.Store, error) {
	st, err := postgres.New(context.Background(), s.pool, postgres.Options{Schema: s.schema, CallerClock: true, AllowNonDurable: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	s.stores = append(s.stores, st)
	return st, nil
}

func (s *pgShared) process() (store.Store, generationCheck, error) {
	st, err := s.open()
	if err != nil {
		return nil, nil, err
	}
	return serverTime{Store: st, clk: s.clk}, pgCheck{st: st, read: s.generation}, nil
}

func (s *pgShared) save() error {
	if err := pgsnap.Save(context.Background(), s.pool, s.schema, s.backup); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	s.hasSave = true
	return nil
}

func (s *pgShared) saved() bool { return s.hasSave }

func (s *pgShared) lose(restore bool) error {
	var err error
	if restore && s.hasSave {
		err = pgsnap.Restore(context.Background(), s.pool, s.schema, s.backup)
	} else {
		s.losses++
		err = pgsnap.Empty(context.Background(), s.pool, s.schema, generationOf(s.seed, s.losses))
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return nil
}

// close closes the round's stores and gives its schema back.
func (s *pgShared) close() error {
	for _, st := range s.stores {
		_ = st.Close()
	}
	s.run.give(s.schema)
	return nil
}

// generation is the schema's generation marker now.
func (s *pgShared) generation() string {
	g, _ := s.Store.Generation(context.Background())
	return g
}

// pgCheck is a process store's generation check on store/postgres: the
// store's own. Its calls need no check of the simulation's before them:
// the store reads the marker in every transaction.
type pgCheck struct {
	st   *postgres.Store
	read func() string
}

// explain words the store's ErrGenerationChanged as markerCheck words a
// loss (errors.Is still finds both).
func (c pgCheck) explain(err error) error {
	if !errors.Is(err, postgres.ErrGenerationChanged) {
		return err
	}
	return &lossError{msg: fmt.Sprintf("%v: %s, expected %s", errGenerationChanged, c.read(), c.st.ExpectedGeneration()), err: err}
}

// lossError is a loss store/postgres detected, in the simulation's words.
type lossError struct {
	msg string
	err error
}

func (e *lossError) Error() string   { return e.msg }
func (e *lossError) Unwrap() []error { return []error{errGenerationChanged, e.err} }

func (c pgCheck) ExpectGeneration(ctx context.Context, gen string) error {
	return c.explain(c.st.ExpectGeneration(ctx, gen))
}
func (c pgCheck) GenerationLoss() error { return c.explain(c.st.GenerationLoss()) }
func (c pgCheck) CheckGeneration(ctx context.Context) error {
	return c.explain(c.st.CheckGeneration(ctx))
}
func (c pgCheck) enter() error { return nil }
