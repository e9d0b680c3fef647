package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// syncRepCluster starts a cluster whose COMMITs wait for a synchronous
// standby that does not exist, and returns the store over it and an admin
// pool.
func syncRepCluster(t *testing.T) (*Store, func() []int32, func(string)) {
	t.Helper()
	c := pgtest.StartCluster(t)
	ctx := context.Background()
	admin := pool(t, c.DSN("postgres"))
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	s := open(t, Options{DSN: c.DSN("postgres")}) // migrates before the standby is required
	exec(`ALTER SYSTEM SET synchronous_standby_names = 'nosuchstandby'`)
	exec(`SELECT pg_reload_conf()`)
	// pg_reload_conf only signals the postmaster, which then signals the
	// sessions: a COMMIT sent before a session took the signal does not
	// wait. So wait until a new session sees the setting (the postmaster
	// has reloaded), then replace the store's sessions, which may predate
	// it, by new ones.
	waitFor(t, func() bool {
		admin.Reset()
		var v string
		if err := admin.QueryRow(ctx, `SHOW synchronous_standby_names`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v == "nosuchstandby"
	})
	s.pool.Reset()
	// waiting lists the backends that wait for the standby (SyncRep).
	waiting := func() []int32 {
		rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int32
		for rows.Next() {
			var p int32
			if err := rows.Scan(&p); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, p)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return pids
	}
	return s, waiting, exec
}

// returned fails the test when the Begin that should wait for the standby
// has returned instead (its COMMIT did not wait): never keep polling for a
// wait that will not come.
func returned(t *testing.T, done <-chan error) bool {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Begin returned (%v) without its COMMIT waiting for the standby", err)
	default:
	}
	return false
}

// TestCancelledSyncRepCommitIsUnknown: a Begin whose COMMIT waits for a
// synchronous standby and is cancelled by pg_cancel_backend gets
// PostgreSQL's WARNING (01000, "canceling wait for synchronous
// replication", committed locally) and a COMMIT tag; the store does not
// take it as done: ErrCommitUnknown, STORE_UNAVAILABLE, not retried. The
// record is on the primary all the same.
func TestCancelledSyncRepCommitIsUnknown(t *testing.T) {
	s, waiting, _ := syncRepCluster(t)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := s.Begin(ctx, storetest.Attempt("sync/r", 1, 1, "a"))
		done <- err
	}()
	var pids []int32
	waitFor(t, func() bool { pids = waiting(); return len(pids) == 1 || returned(t, done) })
	if _, err := s.pool.Exec(ctx, `SELECT pg_cancel_backend($1)`, pids[0]); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("Begin whose sync-rep wait was cancelled: %v, want ErrCommitUnknown", err)
	}
	for _, want := range []string{"canceling wait for synchronous replication", "already committed locally", "SQLSTATE 01000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if got := store.ErrorCode(err); got != "STORE_UNAVAILABLE" {
		t.Errorf("code %s, want STORE_UNAVAILABLE", got)
	}
	if n := s.Retried(); n != 0 {
		t.Errorf("%d retries of a commit of unknown durability, want none", n)
	}
	assertInFlightLocally(t, s)
}

// TestCtxCancelledSyncRepCommit: when the caller's ctx ends while the
// COMMIT waits for the standby (statement_timeout does not bound that
// wait), pgx closes the connection (sending a cancel request) and returns
// the ctx's error: never success, though the record committed locally.
func TestCtxCancelledSyncRepCommit(t *testing.T) {
	s, waiting, _ := syncRepCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Begin(ctx, storetest.Attempt("sync/r", 1, 1, "a"))
		done <- err
	}()
	waitFor(t, func() bool { return len(waiting()) == 1 || returned(t, done) })
	cancel()
	err := <-done
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin whose ctx ended in the sync-rep wait: %v, want context.Canceled", err)
	}
	if n := s.Retried(); n != 0 {
		t.Errorf("%d retries, want none", n)
	}
	// pgx closes the connection with a cancel request of its own (sent
	// asynchronously): the server's wait ends as pg_cancel_backend's does
	// and the transaction, committed locally, becomes visible. Should
	// that request not arrive, the wait is cancelled here; either way the
	// record shows once no backend waits.
	waitFor(t, func() bool {
		pids := waiting()
		for _, p := range pids {
			if _, err := s.pool.Exec(context.Background(), `SELECT pg_cancel_backend($1)`, p); err != nil {
				t.Fatal(err)
			}
		}
		return len(pids) == 0
	})
	assertInFlightLocally(t, s)
}

// assertInFlightLocally reads, without waiting for a standby, that the
// Begin whose COMMIT was cancelled did commit on the primary.
func assertInFlightLocally(t *testing.T, s *Store) {
	t.Helper()
	var inFlight bool
	err := s.pool.QueryRow(context.Background(), `SELECT in_flight FROM `+s.schema+`.records WHERE resource = 'sync/r'`).Scan(&inFlight)
	if err != nil || !inFlight {
		t.Fatalf("the record on the primary: in flight %v, %v; want the Begin committed locally", inFlight, err)
	}
}
