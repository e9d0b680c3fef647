package anchor_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	storepg "github.com/fencegate/fencegate/store/postgres"
)

// pgTables are the tables of the PostgreSQL store's data set, the
// generation marker's (meta) included: what a backup holds and a restore
// puts back. schema_version stays (a restore of this release's schema).
var pgTables = []string{"meta", "records", "receipts", "counts", "quarantine", "enforcement", "trust"}

// pgBackend is store/postgres on the machine's PostgreSQL, in a database
// of its own. A snapshot copies the schema's tables, generation marker
// included, and a restore puts them back, as a backup or a point-in-time
// recovery does (and, with the marker kept, as a failover to a standby
// that lacked the later commits does). Wipe drops the schema: another,
// empty database behind the DSN, migrated again by the next Open.
type pgBackend struct {
	dsn   string
	snaps int
}

const pgSchema = "fg"

func newPostgres(t testing.TB) *pgBackend { return &pgBackend{dsn: pgtest.Database(t)} }

func (p *pgBackend) Name() string { return "postgres" }

func (p *pgBackend) Open(t testing.TB) store.Store {
	t.Helper()
	st, err := storepg.Open(context.Background(), storepg.Options{DSN: p.dsn, Schema: pgSchema, CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// exec runs stmts in one transaction on a connection of its own.
func (p *pgBackend) exec(t testing.TB, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (p *pgBackend) Snapshot(t testing.TB) string {
	t.Helper()
	p.snaps++
	snap := "snap" + strconv.Itoa(p.snaps)
	stmts := []string{"CREATE SCHEMA " + snap}
	for _, tb := range pgTables {
		stmts = append(stmts, "CREATE TABLE "+snap+"."+tb+" AS TABLE "+pgSchema+"."+tb)
	}
	p.exec(t, stmts...)
	return snap
}

func (p *pgBackend) Restore(t testing.TB, snap string) {
	t.Helper()
	stmts := []string{"TRUNCATE " + pgSchema + "." + pgTables[0]}
	for _, tb := range pgTables[1:] {
		stmts[0] += ", " + pgSchema + "." + tb
	}
	for _, tb := range pgTables {
		stmts = append(stmts, "INSERT INTO "+pgSchema+"."+tb+" SELECT * FROM "+snap+"."+tb)
	}
	p.exec(t, stmts...)
}

func (p *pgBackend) Wipe(t testing.TB) { t.Helper(); p.exec(t, "DROP SCHEMA "+pgSchema+" CASCADE") }
