// Package pgtest gives tests a database of their own on the machine's
// PostgreSQL (127.0.0.1:5432, user postgres, trust authentication; .ci/run
// starts it when it is not running): Database creates fg_<random> and drops
// it when the test ends, so tests never see each other's rows. Set
// FENCEGATE_POSTGRES_DSN to use another server (a DSN of a role allowed to
// create databases; the database it names is only used to create and drop
// the test's own). A server that does not answer fails the test with a
// message saying how to start one: the PostgreSQL tests never skip.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the server's DSN when FENCEGATE_POSTGRES_DSN is unset.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminDSN returns the DSN tests create their databases with.
func AdminDSN() string {
	if dsn := os.Getenv("FENCEGATE_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// Database creates a new, empty database and returns its DSN; it is
// dropped (its connections terminated) when tb ends.
func Database(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := AdminDSN()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: PostgreSQL does not answer at %s: %v\n"+
			"start it (bash .ci/run does: pg_ctlcluster --skip-systemctl-redirect <version> main start, "+
			"or apt-get install postgresql), or set FENCEGATE_POSTGRES_DSN", admin, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "fg_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() { drop(tb, admin, name) })
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	cfg.Database = name
	return DSN(cfg)
}

// drop drops the database, ending its connections.
func drop(tb testing.TB, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Errorf("pgtest: drop %s: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		tb.Errorf("pgtest: drop %s: %v", name, err)
	}
}

// DSN renders a connection config's host, port, user and database as a
// URL DSN (the password too when it has one), sslmode disable unless it
// has TLS.
func DSN(cfg *pgx.ConnConfig) string {
	u := "postgres://" + cfg.User
	if cfg.Password != "" {
		u += ":" + cfg.Password
	}
	u += "@" + cfg.Host
	if cfg.Port != 0 {
		u += ":" + strconv.Itoa(int(cfg.Port))
	}
	u += "/" + cfg.Database
	if cfg.TLSConfig == nil {
		u += "?sslmode=disable"
	}
	return u
}
