package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/internal/pgtest"
)

// The postgres arms (store/postgres) and the library-mode phase
// (library.go) run on the machine's PostgreSQL (pgtest.AdminDSN:
// 127.0.0.1:5432, user postgres, or FENCEGATE_POSTGRES_DSN), in a
// database of the run's own, created at the start and dropped at the
// end. A server that does not answer skips them with the reason
// (skippedArm), it does not fail the run: the other arms do not need it.

// pgConnectTimeout bounds the bench's own connections to PostgreSQL.
const pgConnectTimeout = 5 * time.Second

// benchDatabase is the run's own database.
type benchDatabase struct {
	admin   string // the DSN it was created with and is dropped with
	name    string // fgbench_<random>
	dsn     string // its DSN
	dsnFile string // the DSN in a file, as store.postgres.dsnFile reads it
}

// benchDatabaseName is a new database name: fgbench_ and 16 hex digits.
func benchDatabaseName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "fgbench_" + hex.EncodeToString(b)
}

// createBenchDatabase creates a fresh database on the server admin names
// and writes its DSN into dir/postgres.dsn.
func createBenchDatabase(ctx context.Context, admin, dir string) (*benchDatabase, error) {
	cctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin)
	if err != nil {
		return nil, fmt.Errorf("bench: PostgreSQL not reachable at %s: %w", admin, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	d := &benchDatabase{admin: admin, name: benchDatabaseName()}
	if _, err := conn.Exec(cctx, "CREATE DATABASE "+d.name); err != nil {
		return nil, fmt.Errorf("bench: create database %s: %w", d.name, err)
	}
	if err := d.writeDSN(dir); err != nil {
		if derr := d.drop(); derr != nil {
			return nil, fmt.Errorf("%w; %w", err, derr)
		}
		return nil, err
	}
	return d, nil
}

// writeDSN sets the database's DSN (admin's with its name) and writes it
// into dir/postgres.dsn.
func (d *benchDatabase) writeDSN(dir string) error {
	cfg, err := pgx.ParseConfig(d.admin)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	cfg.Database = d.name
	d.dsn = pgtest.DSN(cfg)
	d.dsnFile = filepath.Join(dir, "postgres.dsn")
	if err := os.WriteFile(d.dsnFile, []byte(d.dsn+"\n"), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// drop drops the database, ending the connections still on it.
func (d *benchDatabase) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("bench: drop database %s: %w", d.name, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("bench: drop database %s: %w", d.name, err)
	}
	return nil
}

// skippedArm is an arm the run could not measure, and why.
type skippedArm struct {
	Arm    string `json:"arm"`
	Reason string `json:"reason"`
}

// startPostgres creates the run's database when it has none yet. When
// that fails (the server does not answer, the role may not create a
// database) it records why in s.pgSkip: every postgres arm and the
// library phase are then skipped with that reason, and the run goes on.
func (s *stack) startPostgres(ctx context.Context) {
	if s.pg != nil || s.pgSkip != "" {
		return
	}
	d, err := createBenchDatabase(ctx, pgtest.AdminDSN(), s.dir)
	if err != nil {
		s.pgSkip = err.Error()
		return
	}
	s.pg = d
}

// stopPostgres drops the run's database, if it made one.
func (s *stack) stopPostgres(progress func(string, ...any)) {
	if s.pgStat != nil {
		_ = s.pgStat.Close(context.Background())
		s.pgStat = nil
	}
	if s.pg == nil {
		return
	}
	if err := s.pg.drop(); err != nil {
		progress("bench: %v\n", err)
	}
	s.pg = nil
}

// pgDSNFile is the run's database's DSN file, "" when it has none.
func (s *stack) pgDSNFile() string {
	if s.pg == nil {
		return ""
	}
	return s.pg.dsnFile
}
