package postgres

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// DefaultSchema is the PostgreSQL schema the tables live in when
// Options.Schema is empty.
const DefaultSchema = "fencegate"

// DefaultMaxAttempts bounds the attempts of one call under serialization
// failures when Options.MaxAttempts is zero.
const DefaultMaxAttempts = 100

// Backoff between attempts: full jitter, doubling from backoffBase up to
// backoffMax (as store/redis).
const (
	backoffBase = 200 * time.Microsecond
	backoffMax  = 20 * time.Millisecond
)

// ErrContention is returned (wrapped) when a call's transaction failed to
// serialize Options.MaxAttempts times in a row. Nothing was written by
// that call.
var ErrContention = errors.New("store/postgres: too much contention on the resource")

// DefaultMaxConns is the pool's size when Options.MaxConns is zero. A store
// transaction waits on the server (its commit's WAL flush), not on this
// process's CPU, so pgxpool's own default, max(4, CPUs), held the sidecar
// to four transactions in flight: 1.0 ms per accepted write with 16
// callers against 0.65 ms with 16 connections
// (BenchmarkBeginCommitParallel, PGBENCH_CONNS). Every replica of every
// service holds up to this many: size max_connections for it.
const DefaultMaxConns = 16

// Options configures a PostgreSQL store.
type Options struct {
	// DSN is the connection string (Open only; required there): a URL
	// (postgres://...) or key=value pairs, as libpq reads them.
	DSN string
	// TLS, when set, replaces the TLS configuration the DSN's sslmode
	// makes (Open only): the sidecar builds one that re-reads rotated
	// files.
	TLS *tls.Config
	// HostTLS, with TLS set, gives the TLS configuration of the DSN's
	// hosts it names (Open only), in TLS's place: each host's name to
	// verify. A host it does not name gets a copy of TLS whose ServerName,
	// when TLS has none, is the host.
	HostTLS map[string]*tls.Config
	// MaxConns and MinConns bound the pool (Open only; DefaultMaxConns
	// and pgxpool's 0 when zero).
	MaxConns, MinConns int32
	// ConnectTimeout bounds a connection's dial and handshake (Open only).
	ConnectTimeout time.Duration
	// StatementTimeout is the server's statement_timeout for the store's
	// sessions (Open only; the server's setting when zero).
	StatementTimeout time.Duration

	// Schema is the PostgreSQL schema of the store's tables (DefaultSchema
	// when empty), so that several services can share one database.
	Schema string
	// MaxResponseBody is the stored response body limit (see
	// store.BodyLimit).
	MaxResponseBody int
	// MaxAttempts bounds the attempts of one call whose transaction fails
	// to serialize (DefaultMaxAttempts when zero); past it the call fails
	// with ErrContention.
	MaxAttempts int
	// CallerClock makes every call decide at its input's Now instead of
	// the server's clock_timestamp(). Leave it off when several sidecars
	// share the store (their skew would move when a mutation counts as
	// expired); the conformance suite, which drives a virtual clock, sets
	// it.
	CallerClock bool
	// ExpectedGeneration, when set, is the generation marker every call
	// must see (the sidecar takes it from its outside anchor; see
	// Store.ExpectGeneration).
	ExpectedGeneration string
	// AllowNonDurable lets Open and New accept sessions that run with
	// fsync off or synchronous_commit off or local (ErrNotDurable
	// otherwise), with a warning: a scratch database in development only.
	AllowNonDurable bool
	// Logger receives Open's and New's warnings (a server accepted under
	// AllowNonDurable, a primary without synchronous standbys);
	// slog.Default() when nil.
	Logger *slog.Logger
}

// Store is the PostgreSQL backend. It implements store.Store (the methods
// of store.NewTxBackend over its transactions) and store.TxStore.
type Store struct {
	txBackend

	pool        *pgxpool.Pool
	owned       bool
	q           queries
	schema      string
	maxAttempts int
	maxBody     int
	callerClock bool
	closed      atomic.Bool
	commits     *commitWatch          // Open's: the warnings a COMMIT received
	gen         store.GenerationCheck // the marker expected, the loss detected
	// retried counts the transactions run again after a serialization
	// failure or a deadlock.
	retried atomic.Int64
}

// txBackend is the store.Store that store.NewTxBackend makes of a Store,
// embedded so that its methods are the Store's.
type txBackend = store.Store

var (
	_ store.Store   = (*Store)(nil)
	_ store.TxStore = (*Store)(nil)
)

// Open connects a pool to opts.DSN, checks the server answers, applies the
// schema's migrations (schema.go) and returns a store over it; Close
// closes the pool. Unlike New's, its transactions notice a COMMIT that
// PostgreSQL answered with a warning (ErrCommitUnknown).
func Open(ctx context.Context, opts Options) (*Store, error) {
	cfg, err := poolConfig(opts)
	if err != nil {
		return nil, err
	}
	w := &commitWatch{}
	cfg.ConnConfig.OnNotice = w.onNotice(cfg.ConnConfig.OnNotice)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store/postgres: open %s: %w", cfg.ConnConfig.Host, err)
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	s.commits = w
	return s, nil
}

// poolConfig builds the pool's configuration from opts.
func poolConfig(opts Options) (*pgxpool.Config, error) {
	if opts.DSN == "" {
		return nil, errors.New("store/postgres: open: DSN required")
	}
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		// pgconn's parse error may quote the DSN, password included.
		return nil, errors.New("store/postgres: open: the DSN does not parse")
	}
	if opts.TLS != nil {
		withTLS(&cfg.ConnConfig.Config, opts.TLS, opts.HostTLS)
	}
	cfg.MaxConns = DefaultMaxConns
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MinConns > 0 {
		cfg.MinConns = opts.MinConns
	}
	if opts.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if opts.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	}
	return cfg, nil
}

// New returns a store over pool (which the caller keeps and closes): it
// checks the durability settings the pool's sessions run with
// (ErrNotDurable, see Options.AllowNonDurable), then reads the schema's
// version and applies the migrations it lacks (schema.go). A COMMIT of
// its own that PostgreSQL answers with a warning goes unnoticed unless
// the store was made by Open (ErrCommitUnknown).
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if opts.ExpectedGeneration != "" {
		if err := store.ValidateGeneration(opts.ExpectedGeneration); err != nil {
			return nil, err
		}
	}
	if err := checkDurable(ctx, pool, opts.AllowNonDurable, opts.Logger); err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool, schema); err != nil {
		return nil, err
	}
	s := &Store{
		pool:        pool,
		q:           newQueries(schema),
		schema:      schema,
		maxAttempts: opts.MaxAttempts,
		maxBody:     opts.MaxResponseBody,
		callerClock: opts.CallerClock,
	}
	if s.maxAttempts <= 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	s.gen.Expect(opts.ExpectedGeneration)
	// Compaction one resource per transaction: each step holds one
	// record's lock, never every resource's at once.
	s.txBackend = store.NewTxBackend(s, store.TxOptions{MaxResponseBody: opts.MaxResponseBody, CompactEachResource: true})
	return s, nil
}

// Schema returns the PostgreSQL schema of the store's tables.
func (s *Store) Schema() string { return s.schema }

// Retried returns how many transactions ran again after a serialization
// failure or a deadlock.
func (s *Store) Retried() int64 { return s.retried.Load() }

// Close implements store.Store: later calls return store.ErrClosed; the
// pool is closed when Open made it.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// Update implements store.TxStore: fn runs in one transaction (READ
// COMMITTED with the record's lock for lockedOps, else SERIALIZABLE), run
// again (with a jittered backoff after the second run)
// when PostgreSQL aborts it for a serialization failure, a deadlock or a
// record created concurrently (ErrRecordRace), at
// most Options.MaxAttempts times, then the call fails with ErrContention.
// An error of fn that is not PostgreSQL's (a decision's) is returned as
// it is, after the transaction committed its reads (SERIALIZABLE reads
// are valid only once their transaction commits) when fn wrote nothing,
// or rolled back when it did.
func (s *Store) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	return s.run(ctx, op, false, fn)
}

// View implements store.TxStore: fn runs in a SERIALIZABLE READ ONLY
// transaction, retried as Update's.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.run(ctx, "view", true, fn)
}

// lockedOps are the operations of NewTxBackend on one resource's rows
// (its record, its receipts, its quarantine entries; with library mode's
// "keep refusal", store.KeepRejection), which every one of
// them reaches through Tx.Load of the record first: they run at READ
// COMMITTED with the record's row lock taken by that Load (Tx.open), so
// that writers of one resource queue on its record while writers of
// others never conflict. Under SERIALIZABLE they aborted each other for
// sharing index pages (predicate locks are per page): 1.8 runs again per
// accepted write with 16 callers on 16 resources
// (BenchmarkBeginCommitParallel). Every other operation (the trust pins,
// the enforcement ledger) reads or rewrites a whole set and stays
// SERIALIZABLE.
var lockedOps = map[string]bool{
	"begin": true, "commit": true, "mark unknown": true, "resolve": true, "abort": true,
	"pause": true, "resume": true, "repair": true, "compact": true, "keep refusal": true,
}

// run runs fn in transactions until one is not aborted for a
// serialization failure.
func (s *Store) run(ctx context.Context, op string, readOnly bool, fn func(store.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	for i := range s.maxAttempts {
		if i > 1 {
			// Real time only spaces retries; nothing is decided by it.
			clock.Sleep(clock.Real(), backoff(i-1), nil)
		}
		err := s.attempt(ctx, readOnly, !readOnly && lockedOps[op], !readOnly && lockedOps[op] && op != "compact", fn)
		if !retryable(err) {
			return s.wrap(op, err)
		}
		s.retried.Add(1)
	}
	return wrap(op, ErrContention)
}

// enter refuses a call on a closed store, a done ctx or a store that
// detected a loss.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	_, err := s.gen.Expected()
	return err
}

// attempt runs fn once in a transaction on a connection of the pool.
// BEGIN and the read of the generation marker go in one round trip; a
// connection left in a transaction (a failed ROLLBACK) is closed by the
// pool when released.
func (s *Store) attempt(ctx context.Context, readOnly, locked, deferWrites bool, fn func(store.Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := s.begin(ctx, conn, readOnly, locked); err != nil {
		return err
	}
	ended := false
	defer func() {
		if !ended {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	t := &Tx{ctx: ctx, tx: conn, q: &s.q, schema: s.schema, callerClock: s.callerClock, lockOnLoad: locked, deferred: deferWrites}
	ferr := fn(t)
	if ferr != nil && (t.wrote || isPostgres(ferr)) {
		return ferr
	}
	// A decision's error too: its reads count once they commit.
	if err := s.commit(ctx, conn, t.pending); err != nil {
		return err // the deferred ROLLBACK ends a transaction a write failed in
	}
	ended = true
	if ferr != nil {
		return final{ferr}
	}
	return nil
}

// commit sends the transaction's queued writes (a Tx's deferred ones)
// and COMMIT in one round trip. A COMMIT answered with a warning (a wait
// for a synchronous standby cancelled) committed locally, maybe not on the
// standby: ErrCommitUnknown, not retried, never success. A write that
// fails leaves the transaction aborted (the COMMIT is not run), for the
// caller to roll back.
func (s *Store) commit(ctx context.Context, conn *pgxpool.Conn, pending []queued) error {
	pgc := conn.Conn().PgConn()
	n := s.commits.watch(pgc)
	tag, err := sendCommit(ctx, conn, pending)
	warned := s.commits.done(pgc, n)
	if err != nil {
		return err
	}
	if warned != nil {
		return fmt.Errorf("%w: %s: %s (SQLSTATE %s)", ErrCommitUnknown, warned.Message, warned.Detail, warned.Code)
	}
	if tag.String() == "ROLLBACK" {
		return errors.New("the transaction was rolled back at COMMIT")
	}
	return nil
}

// sendCommit runs pending and COMMIT, pipelined, and returns COMMIT's tag.
func sendCommit(ctx context.Context, conn *pgxpool.Conn, pending []queued) (pgconn.CommandTag, error) {
	if len(pending) == 0 {
		return conn.Exec(ctx, "COMMIT")
	}
	return sendQueued(ctx, conn, pending, "COMMIT")
}

// begin starts a transaction on conn (READ COMMITTED when locked, else
// SERIALIZABLE) and, when a generation
// is expected, reads and checks the marker in the same round trip.
func (s *Store) begin(ctx context.Context, conn *pgxpool.Conn, readOnly, locked bool) error {
	expected, err := s.gen.Expected()
	if err != nil {
		return err
	}
	begin := "BEGIN ISOLATION LEVEL SERIALIZABLE"
	if locked {
		begin = "BEGIN ISOLATION LEVEL READ COMMITTED"
	}
	if readOnly {
		begin += " READ ONLY"
	}
	if expected == "" {
		_, err := conn.Exec(ctx, begin)
		return dbErr("begin", err)
	}
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue(s.q.generation)
	br := conn.SendBatch(ctx, b)
	var got string
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&got)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	// No row, or no table (markerGone): the marker is missing.
	ok := err == nil
	if errors.Is(err, pgx.ErrNoRows) || markerGone(err) {
		err = nil
	}
	if err != nil {
		return dbErr("begin", err)
	}
	if err := s.gen.Check(got, ok, expected, lossError); err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}

// final carries fn's own error out of an attempt, returned unwrapped.
type final struct{ err error }

func (f final) Error() string { return f.err.Error() }
func (f final) Unwrap() error { return f.err }

// wrap names op in an error of PostgreSQL or of the connection; fn's own
// errors and a detected loss are returned as they are.
func (s *Store) wrap(op string, err error) error {
	var f final
	if errors.As(err, &f) {
		return f.err
	}
	if err == nil || errors.Is(err, ErrGenerationChanged) {
		return err
	}
	return wrap(op, err)
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store/postgres: %s: %w", op, err)
}

// dbError is an error of a query a Tx ran: PostgreSQL's, or the
// connection's.
type dbError struct {
	what string
	err  error
}

func (e *dbError) Error() string { return e.what + ": " + e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

// dbErr wraps a query's error (nil stays nil).
func dbErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return &dbError{what: what, err: err}
}

// isPostgres reports whether err came from a query (rather than from a
// decision or the store's checks of what it read).
func isPostgres(err error) bool {
	var de *dbError
	var pe *pgconn.PgError
	return errors.As(err, &de) || errors.As(err, &pe)
}

// retryable reports a serialization failure (40001) or a deadlock
// (40P01): PostgreSQL rolled the transaction back, so it runs again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, ErrRecordRace) || errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 16)
	return time.Duration(rand.Int64N(int64(min(d, backoffMax)) + 1))
}
