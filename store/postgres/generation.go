package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/store"
)

// ErrGenerationChanged is returned (wrapped) by every call of a store whose
// database lost its data: the generation marker (the meta table's row
// "generation") is missing or is not the one expected, as in a database
// restored from a backup taken before the marker was written, an empty
// database in place of the old one, or another service's. It wraps none of
// the store's sentinel errors, so the proxy answers STORE_UNAVAILABLE; it
// lasts until ExpectGeneration is called with the marker now in place
// (the sidecar does that once an operator acknowledged the loss at its
// outside anchor).
var ErrGenerationChanged = errors.New("store/postgres: the PostgreSQL store lost data (its generation marker changed)")

// lossError is the loss of a store that expected the marker want and
// read got (ok false: none).
func lossError(got string, ok bool, want string) error {
	if !ok {
		return fmt.Errorf("%w: marker missing, want %s (an empty or replaced database)", ErrGenerationChanged, want)
	}
	return fmt.Errorf("%w: marker %q, want %s (another data set)", ErrGenerationChanged, got, want)
}

// checkIn reads the marker in the transaction q and checks it, when one is
// expected: every transaction of the store decides on a data set whose
// marker it saw in the same snapshot.
func (s *Store) checkIn(ctx context.Context, q querier) error {
	expected, err := s.gen.Expected()
	if err != nil || expected == "" {
		return err
	}
	got, ok, err := s.readMarker(ctx, q)
	if err != nil {
		return err
	}
	return s.gen.Check(got, ok, expected, lossError)
}

// readMarker reads the generation marker (ok false when missing, its
// table included: see markerGone).
func (s *Store) readMarker(ctx context.Context, q querier) (string, bool, error) {
	var got string
	err := q.QueryRow(ctx, s.q.generation).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) || markerGone(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, dbErr("read generation", err)
	}
	return got, true, nil
}

// markerGone reports the error of reading the marker from a table (or a
// schema) that does not exist (SQLSTATE 42P01, 3F000): a new, empty
// database behind the DSN, or a dropped schema. With a generation
// expected that is the marker missing, a loss, as an emptied meta table
// is; the migration that would create the tables runs only at the next
// start.
func markerGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")
}

// Generation implements store.Store: the meta table's generation marker,
// written (a store.NewGeneration) when it is missing, as in a new
// database, and in tables migrated anew when they are gone (the role then
// needs CREATE, as at a first start). It answers even while the store
// refuses calls for a loss (the marker is what an operator acknowledges);
// a marker of another shape is
// store.ErrCorrupt. Writing a marker anew does not hide a loss from a
// store that expects the old one: that store sees another marker and
// stays closed.
func (s *Store) Generation(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if s.closed.Load() {
		return "", store.ErrClosed
	}
	ctx = context.WithoutCancel(ctx)
	got, err := s.generationOn(ctx, s.pool)
	if markerGone(err) {
		// The tables are gone (a dropped schema, a new database): migrate
		// as a start would, so that the new marker is presented now.
		if err := migrate(ctx, s.pool, s.schema); err != nil {
			return "", err
		}
		got, err = s.generationOn(ctx, s.pool)
	}
	return got, err
}

// generationOn writes the marker on q when it is missing, then reads and
// validates it: Generation's, on the pool or in a caller's transaction.
func (s *Store) generationOn(ctx context.Context, q querier) (string, error) {
	if _, err := q.Exec(ctx, s.q.initGeneration, store.NewGeneration()); err != nil {
		return "", wrap("write generation", err)
	}
	got, ok, err := s.readMarker(ctx, q)
	if err != nil {
		return "", wrap("generation", err)
	}
	if !ok {
		return "", wrap("generation", errors.New("marker vanished"))
	}
	if err := store.ValidateGeneration(got); err != nil {
		return "", fmt.Errorf("store/postgres: generation marker %q: %v: %w", got, err, store.ErrCorrupt)
	}
	return got, nil
}

// ExpectGeneration makes gen the marker every later call must see, and
// reads the marker now: a missing or different one fails the store closed
// with ErrGenerationChanged, which is also returned; a matching one lifts
// an earlier loss. store/anchor calls it with the generation registered
// at the registry.
func (s *Store) ExpectGeneration(ctx context.Context, gen string) error {
	if err := store.ValidateGeneration(gen); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	s.gen.Expect(gen)
	return s.CheckGeneration(ctx)
}

// GenerationLoss returns the loss detected (wrapping ErrGenerationChanged),
// or nil while the store trusts its database.
func (s *Store) GenerationLoss() error { return s.gen.Loss() }

// ExpectedGeneration returns the marker the store expects ("" when none).
func (s *Store) ExpectedGeneration() string {
	g, _ := s.gen.Expected()
	return g
}

// CheckGeneration reads the marker now and returns the loss, if any, as a
// transition would: readiness probes call it, so a replaced database shows
// before the next write is refused. A query error is returned as it is
// (the database is unreachable, not known to have lost data).
func (s *Store) CheckGeneration(ctx context.Context) error {
	expected, err := s.gen.Expected()
	if err != nil || expected == "" {
		return err
	}
	got, ok, err := s.readMarker(ctx, s.pool)
	if err != nil {
		return wrap("check generation", err)
	}
	return s.gen.Check(got, ok, expected, lossError)
}
