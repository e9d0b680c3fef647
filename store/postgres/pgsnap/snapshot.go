package pgsnap

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Tables are store/postgres's data tables (its schema.go), in the order a
// snapshot copies them. A test checks the list against the tables a
// migrated schema has, so a new table cannot be left out of a snapshot.
var Tables = []string{"meta", "records", "receipts", "counts", "quarantine", "enforcement", "trust"}

// DB begins transactions: a *pgxpool.Pool, a *pgx.Conn.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Save copies the data tables of schema to the backup schema (created,
// with tables of the same shape, when missing), replacing what an earlier
// Save kept there, in one transaction.
func Save(ctx context.Context, db DB, schema, backup string) error {
	src, dst := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{backup}.Sanitize()
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		stmts := []string{`CREATE SCHEMA IF NOT EXISTS ` + dst}
		for _, t := range Tables {
			stmts = append(stmts, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.%s (LIKE %s.%s)`, dst, t, src, t))
		}
		stmts = append(stmts, clear(dst)...)
		stmts = append(stmts, copyAll(src, dst)...)
		return run(ctx, tx, "save", stmts)
	})
}

// Restore replaces the rows of schema's data tables by the ones the last
// Save kept in backup (ErrNoSnapshot when none), in one transaction.
func Restore(ctx context.Context, db DB, schema, backup string) error {
	src, dst := pgx.Identifier{backup}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var saved bool
		err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, src+".meta").Scan(&saved)
		if err != nil {
			return fmt.Errorf("pgsnap: restore: %w", err)
		}
		if !saved {
			return fmt.Errorf("%w: %s", ErrNoSnapshot, src)
		}
		return run(ctx, tx, "restore", append(clear(dst), copyAll(src, dst)...))
	})
}

// Empty deletes the rows of schema's data tables and, when generation is not
// empty, writes it as the generation marker (as a store would on its
// first call to a new database, with a marker the caller chose), in one
// transaction.
func Empty(ctx context.Context, db DB, schema, generation string) error {
	q := pgx.Identifier{schema}.Sanitize()
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := run(ctx, tx, "empty", clear(q)); err != nil {
			return err
		}
		if generation == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`.meta (key, value) VALUES ('generation', $1)`, generation); err != nil {
			return fmt.Errorf("pgsnap: empty: write generation: %w", err)
		}
		return nil
	})
}

// Drop removes the backup schema and what it holds.
func Drop(ctx context.Context, db DB, backup string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		return run(ctx, tx, "drop", []string{`DROP SCHEMA IF EXISTS ` + pgx.Identifier{backup}.Sanitize() + ` CASCADE`})
	})
}

// clear empties every data table of the quoted schema q: DELETE, not
// TRUNCATE, which makes new files for every table (many times slower on
// the small tables of a test) and is not MVCC-safe.
func clear(q string) []string {
	stmts := make([]string, len(Tables))
	for i, t := range Tables {
		stmts[i] = `DELETE FROM ` + q + "." + t
	}
	return stmts
}

// copyAll copies every data table's rows from the quoted schema src to dst.
func copyAll(src, dst string) []string {
	stmts := make([]string, len(Tables))
	for i, t := range Tables {
		stmts[i] = fmt.Sprintf(`INSERT INTO %s.%s SELECT * FROM %s.%s`, dst, t, src, t)
	}
	return stmts
}

func run(ctx context.Context, tx pgx.Tx, what string, stmts []string) error {
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("pgsnap: %s: %w", what, err)
		}
	}
	return nil
}
