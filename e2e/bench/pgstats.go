package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// postgresTotals is what PostgreSQL counted on the run's database over
// the whole run (pg_stat_database, read once every sidecar has stopped
// and its backends have flushed their counts): the transactions
// committed and rolled back by the postgres arms' stores (warm-ups,
// every phase and the profiles included) and the library phase. The
// stores run a transaction again when PostgreSQL aborts it, so the share
// rolled back is the figure that says how much of their work was redone.
type postgresTotals struct {
	Database  string   `json:"database"`
	Arms      []string `json:"arms"`
	Commits   int64    `json:"xactCommit"`
	Rollbacks int64    `json:"xactRollback"`
	// Err is why the counts could not be read.
	Err string `json:"error,omitempty"`
}

// abortedShare is the rolled-back share of the transactions, NaN with
// none.
func (t postgresTotals) abortedShare() float64 {
	n := t.Commits + t.Rollbacks
	if n == 0 {
		return math.NaN()
	}
	return float64(t.Rollbacks) / float64(n)
}

// pgFlushWait bounds the wait for the database's backends to exit.
const pgFlushWait = 10 * time.Second

// readPostgresTotals waits until no backend is connected to the run's
// database (their counts are flushed when they exit), then reads its
// totals. arms are the postgres arms that ran, for the report.
func (s *stack) readPostgresTotals(ctx context.Context, arms []string) *postgresTotals {
	if s.pg == nil {
		return nil
	}
	t := &postgresTotals{Database: s.pg.name, Arms: arms}
	if err := s.awaitNoBackends(ctx); err != nil {
		t.Err = err.Error()
		return t
	}
	err := s.pgStat.QueryRow(ctx, "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = $1", s.pg.name).Scan(&t.Commits, &t.Rollbacks)
	if err != nil {
		t.Err = fmt.Sprintf("bench: pg_stat_database: %v", err)
	}
	return t
}

// awaitNoBackends polls pg_stat_activity until no backend serves the
// run's database, at most pgFlushWait.
func (s *stack) awaitNoBackends(ctx context.Context) error {
	deadline := s.ck.Now().Add(pgFlushWait)
	for {
		pids, err := s.pgBackendPids(ctx)
		if err != nil {
			return fmt.Errorf("bench: pg_stat_activity: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		if !s.ck.Now().Before(deadline) {
			return fmt.Errorf("bench: %d backends still on %s after %s", len(pids), s.pg.name, pgFlushWait)
		}
		clock.Sleep(s.ck, 50*time.Millisecond, ctx.Done())
	}
}

// pgArmNames are the postgres arms among arms.
func pgArmNames(arms []*arm) []string {
	var names []string
	for _, a := range arms {
		if a.Store == "postgres" {
			names = append(names, a.Name)
		}
	}
	return names
}
