package main

import (
	"fmt"
	"io"
	"strings"
)

// renderLibrary writes RESULTS.md's library-mode section: per repetition
// the plain and the fenced transactions' percentiles and their
// differences, or why there are none.
func renderLibrary(p func(string, ...any), lib *libraryResult) {
	if lib == nil {
		return
	}
	p("## Library mode: added latency per transaction\n\n")
	p("The same business transaction (BEGIN at READ COMMITTED, the default; the fence call; UPDATE of one row of a %d-row table in the run's database; COMMIT) on one connection from the load generator, with and without the fence call, alternating, %d of each per repetition after %d unmeasured; added = the fenced percentile minus the plain one in the same repetition (library.go). ",
		libraryRows, lib.Iterations, libraryWarmup)
	if lib.Fence != "" {
		p("Fence call: `%s`.\n\n", lib.Fence)
	} else {
		p("\n\n**%s**\n\n", lib.NotMeasured)
	}
	if len(lib.Reps) == 0 {
		return
	}
	p("The fence call's own p50 and p99 (timed around it inside the fenced transactions) say what of the added latency is the call; the rest is the commit's. Round trips are the connection's to PostgreSQL per transaction (each statement, BEGIN, savepoint and COMMIT included, or batch: one).\n\n")
	p("| rep | plain p50 ms | plain p99 ms | plain p99.9 ms | fenced p50 ms | fenced p99 ms | fenced p99.9 ms | added p50 ms | added p99 ms | fence call p50 ms | fence call p99 ms | round trips plain / fenced | errors |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range lib.Reps {
		errs := fmtNum(float64(r.PlainErrors+r.FencedErrors), 0)
		if r.FirstError != "" {
			errs += ": " + tableCell(r.FirstError)
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n", r.Rep,
			fmtNum(r.Plain.P50, 3), fmtNum(r.Plain.P99, 3), fmtNum(r.Plain.P999, 3),
			fmtNum(r.Fenced.P50, 3), fmtNum(r.Fenced.P99, 3), fmtNum(r.Fenced.P999, 3),
			fmtNum(r.added(func(l latencySummary) float64 { return l.P50 }), 3),
			fmtNum(r.added(func(l latencySummary) float64 { return l.P99 }), 3),
			fmtNum(r.Call.P50, 3), fmtNum(r.Call.P99, 3), fmtNum(float64(r.PlainTrips), 1), fmtNum(float64(r.FencedTrips), 1), errs)
	}
	p("\n")
}

// renderSkipped writes the line naming the arms the run skipped, and why.
func renderSkipped(p func(string, ...any), sk []skippedArm) {
	if len(sk) == 0 {
		return
	}
	parts := make([]string, len(sk))
	for i, a := range sk {
		parts[i] = a.Arm + " (" + a.Reason + ")"
	}
	p("**Skipped arms**: %s. Their targets are \"not measured\".\n\n", tableCell(strings.Join(parts, "; ")))
}

// line is the totals in one sentence.
func (t *postgresTotals) line() string {
	who := "the library phase"
	if len(t.Arms) > 0 {
		who = strings.Join(t.Arms, ", ") + " and " + who
	}
	if t.Err != "" {
		return fmt.Sprintf("database %s (%s): counts not read: %s", t.Database, who, t.Err)
	}
	return fmt.Sprintf("database %s (%s, every phase and warm-up included): %d transactions committed, %d rolled back: %s%% of them aborted",
		t.Database, who, t.Commits, t.Rollbacks, fmtNum(100*t.abortedShare(), 1))
}

// print writes the totals' progress line.
func (t *postgresTotals) print(progress io.Writer) {
	fmt.Fprintf(progress, "bench: PostgreSQL %s\n", t.line())
}

// renderPostgresTotals writes RESULTS.md's PostgreSQL section.
func renderPostgresTotals(p func(string, ...any), t *postgresTotals) {
	if t == nil {
		return
	}
	p("## PostgreSQL transactions\n\n")
	p("What PostgreSQL counted (pg_stat_database) on the run's %s, read after every sidecar stopped. ", tableCell(t.line()))
	p("The store runs a transition on one resource at READ COMMITTED with the resource's record row locked, and the pin set and the ledger at SERIALIZABLE; it runs a transaction again when PostgreSQL aborts it (a serialization failure, a deadlock, a record created concurrently), with a jittered backoff from the third attempt, so the aborted share is work redone; a decision that wrote and then failed also rolls back (a run with non-2xx answers says so above).\n\n")
}
