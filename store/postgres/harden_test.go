package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestRefusesNonDurableSessions: a database whose sessions run with
// synchronous_commit off or local (set per database, as the store's own
// session sees it) is refused with ErrNotDurable naming the setting;
// AllowNonDurable opens it with a warning. On the machine's server, with
// no synchronous standby, Open warns about a failover.
func TestRefusesNonDurableSessions(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin := pool(t, pgtest.AdminDSN())
	for _, v := range []string{"off", "local"} {
		t.Run(v, func(t *testing.T) {
			if _, err := admin.Exec(ctx, "ALTER DATABASE "+cfg.Database+" SET synchronous_commit = "+v); err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, Options{DSN: dsn})
			if !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "synchronous_commit is "+v) ||
				!strings.Contains(err.Error(), "allowNonDurable") {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("Open with synchronous_commit %s: %v, want ErrNotDurable naming the setting and allowNonDurable", v, err)
			}
			var logged bytes.Buffer
			s = open(t, Options{DSN: dsn, AllowNonDurable: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if res, err := s.Begin(ctx, storetest.Attempt("nd/"+v, 1, 1, "a")); err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin under allowNonDurable: %v %v", res.Decision, err)
			}
			if !strings.Contains(logged.String(), "allowNonDurable is set") || !strings.Contains(logged.String(), "synchronous_commit="+v) {
				t.Fatalf("the warning logged: %q", logged.String())
			}
		})
	}
	t.Run("durable", func(t *testing.T) {
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+cfg.Database+" RESET synchronous_commit"); err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		s := open(t, Options{DSN: dsn, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		var names string
		if err := s.pool.QueryRow(ctx, `SELECT current_setting('synchronous_standby_names')`).Scan(&names); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logged.String(), "synchronous_standby_names is empty")
		if strings.Contains(logged.String(), "allowNonDurable") || warned != (names == "") {
			t.Fatalf("the log of a durable server (synchronous_standby_names %q): %q, want the standby warning only when it is empty", names, logged.String())
		}
	})
}

// TestDroppedSchemaIsALoss: the store's schema dropped under a store that
// expects a generation (a new, empty database behind the DSN looks the
// same: no tables) is the marker missing, ErrGenerationChanged, at the
// readiness check and at the next write, not a plain database error.
func TestDroppedSchemaIsALoss(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	for _, check := range []string{"CheckGeneration", "Begin"} {
		t.Run(check, func(t *testing.T) {
			schema := "gone_" + strings.ToLower(check)
			s0 := open(t, Options{DSN: dsn, Schema: schema, CallerClock: true})
			gen, err := s0.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s := open(t, Options{DSN: dsn, Schema: schema, CallerClock: true, ExpectedGeneration: gen})
			if _, err := pool(t, dsn).Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
				t.Fatal(err)
			}
			if check == "CheckGeneration" {
				err = s.CheckGeneration(ctx)
			} else {
				_, err = s.Begin(ctx, storetest.Attempt("gone/r", 1, 1, "a"))
			}
			if !errors.Is(err, ErrGenerationChanged) || !strings.Contains(err.Error(), "marker missing") {
				t.Fatalf("%s after DROP SCHEMA: %v, want ErrGenerationChanged (marker missing)", check, err)
			}
			if store.ErrorCode(err) != fencegate.CodeStoreUnavailable || !errors.Is(s.GenerationLoss(), ErrGenerationChanged) {
				t.Fatalf("the loss: code %s, GenerationLoss %v", store.ErrorCode(err), s.GenerationLoss())
			}
			// The anchor's recheck asks for the marker: the tables are
			// migrated again under a new one, which the store presents
			// without a restart; the loss stays until it is expected.
			gen2, err := s.Generation(ctx)
			if err != nil || gen2 == gen {
				t.Fatalf("Generation after DROP SCHEMA: %q %v (was %q)", gen2, err, gen)
			}
			if _, err := s.Records(ctx, store.RecordsQuery{Limit: 1}); !errors.Is(err, ErrGenerationChanged) {
				t.Fatalf("Records once the schema is back with another marker: %v", err)
			}
			if err := s.ExpectGeneration(ctx, gen2); err != nil {
				t.Fatalf("ExpectGeneration(%s): %v", gen2, err)
			}
			if res, err := s.Begin(ctx, storetest.Attempt("gone/r", 1, 1, "a")); err != nil || res.Decision != store.DecisionProceed {
				t.Fatalf("Begin once the new marker is expected: %v %v", res.Decision, err)
			}
		})
	}
}

// leastPrivilegeRole creates a LOGIN role with only USAGE on schema and
// SELECT, INSERT, UPDATE, DELETE on its tables in dsn's database, and
// returns the DSN that connects as it; the role is dropped when t ends.
func leastPrivilegeRole(t *testing.T, dsn, schema string) string {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "fg_role_" + hex.EncodeToString(b)
	admin := pool(t, pgtest.AdminDSN())
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	db := pool(t, dsn)
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), "DROP OWNED BY "+role)
		if _, err := admin.Exec(context.Background(), "DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	for _, stmt := range []string{
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := db.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = role
	return pgtest.DSN(cfg)
}

// TestLeastPrivilegeRole: a role with only USAGE on the schema and
// SELECT, INSERT, UPDATE, DELETE on its tables opens a migrated schema (no
// DDL runs) and writes; on a schema that needs migrating it fails with
// ErrNotMigrated, saying why.
func TestLeastPrivilegeRole(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	if err := open(t, Options{DSN: dsn, Schema: "lp"}).Close(); err != nil {
		t.Fatal(err)
	}
	roleDSN := leastPrivilegeRole(t, dsn, "lp")
	s := open(t, Options{DSN: roleDSN, Schema: "lp"})
	if _, err := s.Generation(ctx); err != nil {
		t.Fatalf("Generation as the role: %v", err)
	}
	if res, err := s.Begin(ctx, storetest.Attempt("lp/r", 1, 1, "a")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin as the role: %v %v", res.Decision, err)
	}
	if _, err := s.Stats(ctx); err != nil {
		t.Fatalf("Stats as the role: %v", err)
	}
	s2, err := Open(ctx, Options{DSN: roleDSN, Schema: "fresh"})
	if err == nil {
		_ = s2.Close()
	}
	if !errors.Is(err, ErrNotMigrated) || !strings.Contains(err.Error(), "version 0") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Open of an unmigrated schema as the role: %v, want ErrNotMigrated", err)
	}
}
