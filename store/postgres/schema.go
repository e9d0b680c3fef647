package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/store"
)

// SchemaVersion is the newest schema this package knows. Open applies the
// migrations up to it (migrations[v-1] takes a schema from v-1 to v), each
// in the transaction that records its version, and refuses a schema newer
// than it (ErrSchemaTooNew): a sidecar older than the one that migrated
// never writes under rules it does not know. Migrations only go forward.
const SchemaVersion = 1

// ErrSchemaTooNew is returned (wrapped) by Open when the database's schema
// version is newer than SchemaVersion: a newer fencegate migrated it.
var ErrSchemaTooNew = errors.New("store/postgres: the database's schema is newer than this fencegate knows (upgrade the sidecar, never downgrade a migrated schema)")

// migrationLockKey is the first key of the advisory lock Open holds while
// it migrates (pg_advisory_xact_lock(key, hashtext(schema))): two sidecars
// starting together migrate one after the other, the second finding the
// schema current.
const migrationLockKey = 0x66656e63 // "fenc"

// migrations are the schema's versions, each a list of statements run
// with %[1]s replaced by the quoted schema name.
//
// Records and receipts are store/codec bytes (bytea), the encoding bolt
// and memory keep, so one codec is the format everywhere; the columns
// beside them are what the queries select or order by: a receipt's
// (fence, seq) and operation ID, a record's in-flight and paused flags
// (partial indexes: Indexed reads only those rows). A fence is a uint64:
// fence_key is fence - 2^63 (bigint, the same order). Quarantine entries,
// ledger entries and trust pins are JSON (jsonb), as in bolt. counts
// holds the number of each resource's receipts (no row for none), kept by
// PutReceipt and DeleteReceipt, so that a Commit's trim never counts.
// Resource columns are COLLATE "C": byte order, the order RecordsAfter
// and compaction promise.
var migrations = [][]string{
	{
		`CREATE TABLE %[1]s.meta (key text PRIMARY KEY, value text NOT NULL)`,
		`CREATE TABLE %[1]s.records (
			resource text COLLATE "C" PRIMARY KEY,
			in_flight boolean NOT NULL,
			paused boolean NOT NULL,
			body bytea NOT NULL)`,
		`CREATE INDEX records_in_flight ON %[1]s.records (resource) WHERE in_flight`,
		`CREATE INDEX records_paused ON %[1]s.records (resource) WHERE paused`,
		`CREATE TABLE %[1]s.receipts (
			resource text COLLATE "C" NOT NULL,
			fence_key bigint NOT NULL,
			seq_key bigint NOT NULL,
			operation_id text NOT NULL,
			body bytea NOT NULL,
			PRIMARY KEY (resource, fence_key, seq_key))`,
		`CREATE INDEX receipts_operation ON %[1]s.receipts (resource, operation_id)`,
		`CREATE TABLE %[1]s.counts (resource text COLLATE "C" PRIMARY KEY, receipts bigint NOT NULL CHECK (receipts > 0))`,
		`CREATE TABLE %[1]s.quarantine (
			resource text COLLATE "C" NOT NULL,
			id text NOT NULL,
			body jsonb NOT NULL,
			PRIMARY KEY (resource, id))`,
		`CREATE TABLE %[1]s.enforcement (shape text PRIMARY KEY, body jsonb NOT NULL)`,
		`CREATE TABLE %[1]s.trust (kid text PRIMARY KEY, body jsonb NOT NULL)`,
	},
}

// ErrNotMigrated is returned (wrapped) by Open and New when the schema
// needs migrating and the store's role may not do it (PostgreSQL refused
// the DDL for lack of privilege, SQLSTATE 42501): run one start with a
// role that has CREATE on the database (or owns the schema), then the
// least-privileged role runs on the migrated schema.
var ErrNotMigrated = errors.New("store/postgres: the schema needs migrating and the store's role may not migrate it")

// migrate brings the schema to SchemaVersion. It first reads the recorded
// version with a plain SELECT: a current schema needs no DDL, so a role
// with only USAGE on the schema and SELECT, INSERT, UPDATE, DELETE on its
// tables runs the store. Otherwise, under the advisory lock, in one
// transaction, the schema and its schema_version table are created when
// missing and each missing migration runs. A version newer than
// SchemaVersion is refused either way.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	q := pgx.Identifier{schema}.Sanitize()
	v, err := schemaVersion(ctx, pool, q)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: schema %s is at version %d, this fencegate knows %d", ErrSchemaTooNew, q, v, SchemaVersion)
	}
	if v == SchemaVersion {
		return nil
	}
	err = migrateLocked(ctx, pool, schema)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return fmt.Errorf("%w: schema %s is at version %d, this fencegate needs %d: %w", ErrNotMigrated, q, v, SchemaVersion, err)
	}
	return err
}

// migrateLocked is migrate's DDL under the advisory lock: the version is
// read again there, so that two sidecars starting together migrate once.
func migrateLocked(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockKey, schema); err != nil {
			return fmt.Errorf("store/postgres: migration lock: %w", err)
		}
		q := pgx.Identifier{schema}.Sanitize()
		for _, stmt := range []string{
			`CREATE SCHEMA IF NOT EXISTS ` + q,
			`CREATE TABLE IF NOT EXISTS ` + q + `.schema_version (only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), version integer NOT NULL)`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("store/postgres: create schema %s: %w", q, err)
			}
		}
		v, err := schemaVersion(ctx, tx, q)
		if err != nil {
			return err
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: schema %s is at version %d, this fencegate knows %d", ErrSchemaTooNew, q, v, SchemaVersion)
		}
		for ; v < SchemaVersion; v++ {
			if err := applyMigration(ctx, tx, q, v+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// schemaVersion reads the schema's version, 0 when it has none yet (no
// row, no table, no schema).
func schemaVersion(ctx context.Context, tx querier, q string) (int, error) {
	var v int
	err := tx.QueryRow(ctx, `SELECT version FROM `+q+`.schema_version`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) || markerGone(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store/postgres: read schema version: %w", err)
	}
	if v < 1 {
		return 0, fmt.Errorf("store/postgres: schema version %d: %w", v, store.ErrCorrupt)
	}
	return v, nil
}

// applyMigration runs migration v and records v.
func applyMigration(ctx context.Context, tx pgx.Tx, q string, v int) error {
	for _, stmt := range migrations[v-1] {
		if _, err := tx.Exec(ctx, fmt.Sprintf(stmt, q)); err != nil {
			return fmt.Errorf("store/postgres: migration %d: %w", v, err)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+q+`.schema_version (version) VALUES ($1)
		ON CONFLICT (only_row) DO UPDATE SET version = excluded.version`, v)
	if err != nil {
		return fmt.Errorf("store/postgres: record schema version %d: %w", v, err)
	}
	return nil
}
