package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

const retriesSeries = `fencegate_proxy_store_retries_total{backend="postgres"}`

// scrape returns the value of a series on the health listener's
// /metrics, and whether the page has it.
func scrape(t *testing.T, health, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", series, v, err)
			}
			return f, true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0, false
}

// TestPostgresStoreRetriesMetric: a sidecar on the postgres store exports
// its store's reruns as fencegate_proxy_store_retries_total, at 0 from
// start. A write whose transaction PostgreSQL aborts for a serialization
// failure (another session updated the resource's row after the write's
// transaction took its snapshot, and committed while the write waited on
// its lock) is run again and accepted, and the counter shows the rerun.
func TestPostgresStoreRetriesMetric(t *testing.T) {
	sc := startPostgresSidecar(t, "pgretry")
	s, dsn, forwarded, put := sc.s, sc.dsn, sc.forwarded, sc.put
	if v, ok := scrape(t, s.HealthAddr(), retriesSeries); !ok || v != 0 {
		t.Fatalf("at start: %s = %v (present %v), want 0", retriesSeries, v, ok)
	}
	ctx := context.Background()
	if err := put(1); err != nil {
		t.Fatalf("segment 1: %v", err)
	}

	// Another session updates item/1's record (to the same bytes) and
	// holds the row lock; the next write's transaction reads the record,
	// then waits on that lock to write it.
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if tag, err := tx.Exec(ctx, `UPDATE pgretry.records SET body = body WHERE resource = 'item/1'`); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("update of item/1's record: %v %v", tag, err)
	}
	done := make(chan error, 1)
	go func() { done <- put(2) }()
	watch, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	waitFor(t, "the write's transaction waits on the record's lock", func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("segment 2, its transaction aborted once: %v; want it run again and accepted", err)
	}
	if n := forwarded.Load(); n != 2 {
		t.Fatalf("the backend saw %d writes, want 2", n)
	}
	if v, ok := scrape(t, s.HealthAddr(), retriesSeries); !ok || v < 1 {
		t.Fatalf("after a serialization failure: %s = %v (present %v), want at least 1", retriesSeries, v, ok)
	}
}

// TestStoreMetricsOnlyForCountingBackends: a backend that does not count
// reruns (memory here) exports no retries series.
func TestStoreMetricsOnlyForCountingBackends(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	s := serveUntilDone(t, cfg)
	waitReady(t, s.AdminAddr(), true)
	resp, err := http.Get("http://" + s.HealthAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "fencegate_proxy_store_retries_total") {
		t.Fatal("a memory store exports fencegate_proxy_store_retries_total")
	}
	if _, ok := scrape(t, s.HealthAddr(), "fencegate_proxy_store_resources"); !ok {
		t.Fatal("the scrape finds no store gauge at all: the page or the parser is broken")
	}
}
