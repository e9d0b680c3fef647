package server

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
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
// start. The first write of item/1 finds no record to lock and inserts
// one, while another session has inserted item/1's record and not yet
// committed: the write's INSERT waits on the key, fails when the other
// commits (a unique violation, postgres.ErrRecordRace), and its
// transaction runs again, deciding on the record the other wrote, and is
// accepted. The counter shows the rerun.
func TestPostgresStoreRetriesMetric(t *testing.T) {
	sc := startPostgresSidecar(t, "pgretry")
	s, dsn, forwarded, put := sc.s, sc.dsn, sc.forwarded, sc.put
	if v, ok := scrape(t, s.HealthAddr(), retriesSeries); !ok || v != 0 {
		t.Fatalf("at start: %s = %v (present %v), want 0", retriesSeries, v, ok)
	}
	ctx := context.Background()
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
	if _, err := tx.Exec(ctx, `INSERT INTO pgretry.records (resource, in_flight, paused, body) VALUES ('item/1', false, false, $1)`,
		codec.EncodeRecord(nil, store.Record{Resource: "item/1"})); err != nil {
		t.Fatalf("insert of item/1's record: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- put(1) }()
	watch, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	waitFor(t, "the write's INSERT waits on the record's key", func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("segment 1, its transaction failed once on the key: %v; want it run again and accepted", err)
	}
	if n := forwarded.Load(); n != 1 {
		t.Fatalf("the backend saw %d writes, want 1", n)
	}
	if v, ok := scrape(t, s.HealthAddr(), retriesSeries); !ok || v < 1 {
		t.Fatalf("after a record created concurrently: %s = %v (present %v), want at least 1", retriesSeries, v, ok)
	}
}
