package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/clock"
)

// Library mode (issue 23): a service on PostgreSQL fences its writes
// inside its own transaction (pgfence.Apply(ctx, tx, req)) instead of
// behind a sidecar, and pays the fence's statements in that transaction.
// The library phase measures what it adds: the same business transaction
// (BEGIN at the database's default isolation, READ COMMITTED, as
// pgfence's documentation writes it; the fence call; an UPDATE of one
// row of a table of the run's database; COMMIT) with and without the
// fence call, on one
// connection from the load generator, alternating the two (which one
// goes first alternates too, so drift and caching hit both alike), each
// -library-iterations times per repetition after a warm-up. The added
// latency is the fenced transactions' percentile minus the plain ones'
// in the same repetition, per percentile; its targets (issue23Targets)
// take the median over the repetitions. The fence is a fencedTx, so that
// the call measured is plugged in at one place (libraryFenceCall:
// pgfence.Apply, pgfencecall.go).

// libraryArm names the library phase: -arms selects it like an arm.
const libraryArm = "library-postgres"

// Library phase sizes.
const (
	defaultLibraryIterations = 2000
	quickLibraryIterations   = 300
	// libraryWarmup is the unmeasured iterations before each repetition.
	libraryWarmup = 200
	// libraryRows is the business table's rows; iteration i updates row
	// i mod libraryRows.
	libraryRows = 64
)

// fencedTx is library mode's fence call: it runs inside tx, the business
// transaction of iteration i (i counts from 0 over the whole phase), first,
// before the business write (pgfence's order: the fence decides and
// locks the resource's record, then the service writes). An error rolls
// the transaction back.
type fencedTx func(ctx context.Context, tx pgx.Tx, i int) error

// libraryFence is a fence call ready to measure.
type libraryFence struct {
	// Name is what RESULTS.md calls it, e.g. "pgfence.Apply".
	Name string
	// Setup prepares it on the run's database (its schema, its lease)
	// and returns the call; close, when set, releases what Setup took.
	Setup func(ctx context.Context, env libraryEnv) (call fencedTx, close func(), err error)
}

// libraryEnv is what a fence's Setup may use: the run's database and the
// EdDSA registry (bolt) the sidecar arms take their grants from, with
// its keys (signing.jwk, jwks.json).
type libraryEnv struct {
	DSN         string
	RegistryURL string
	KeysDir     string
}

// libraryEnv is the environment of this run's library phase.
func (s *stack) libraryEnv() libraryEnv {
	env := libraryEnv{DSN: s.pg.dsn}
	if r := s.registries["EdDSA"]; r != nil {
		env.RegistryURL, env.KeysDir = r.url, r.keys
	}
	return env
}

// libraryFenceCall is the fence the library phase measures.
func libraryFenceCall() *libraryFence { return pgfenceApply() }

// libraryResult is the library phase's figures.
type libraryResult struct {
	// Fence is the fence call measured; empty when none was.
	Fence string `json:"fence,omitempty"`
	// NotMeasured says why the fenced transactions did not run (no fence
	// call to measure, no database); the plain ones still ran when there
	// was a database.
	NotMeasured string       `json:"notMeasured,omitempty"`
	Iterations  int          `json:"iterationsPerRepetition"`
	Reps        []libraryRep `json:"reps,omitempty"`
}

// libraryRep is one repetition: Iterations transactions of each kind.
type libraryRep struct {
	Rep    int            `json:"rep"`
	Plain  latencySummary `json:"plain"`
	Fenced latencySummary `json:"fenced"`
	// Call is the fence call's own duration in the fenced transactions
	// measured: what of the added latency is the call, the rest being
	// the commit's.
	Call latencySummary `json:"fenceCall"`
	// PlainTrips and FencedTrips are the round trips to PostgreSQL per
	// measured transaction of each kind (roundTrips).
	PlainTrips   meanFigure `json:"plainRoundTrips"`
	FencedTrips  meanFigure `json:"fencedRoundTrips"`
	PlainErrors  int        `json:"plainErrors"`
	FencedErrors int        `json:"fencedErrors"`
	FirstError   string     `json:"firstError,omitempty"`
}

// added is the repetition's fenced percentile minus its plain one, by
// the percentile pick takes, in ms rounded to the samples' resolution
// (1 ns: what is finer is the subtraction's rounding error); NaN when
// either is missing.
func (r libraryRep) added(pick func(latencySummary) float64) float64 {
	return math.Round((pick(r.Fenced)-pick(r.Plain))*1e6) / 1e6
}

// libraryTable is the business table's DDL and its one-row update.
const (
	libraryCreate = "CREATE TABLE bench_business (id integer PRIMARY KEY, n bigint NOT NULL, note text NOT NULL)"
	librarySeed   = "INSERT INTO bench_business SELECT g, 0, 'bench' FROM generate_series(0, $1 - 1) g"
	libraryUpdate = "UPDATE bench_business SET n = n + 1, note = $2 WHERE id = $1"
)

// runLibrary runs the library phase when -arms selects it: nil when it
// does not.
func (s *stack) runLibrary(ctx context.Context, o options, only *regexp.Regexp, progress io.Writer) *libraryResult {
	if !only.MatchString(libraryArm) || ctx.Err() != nil {
		return nil
	}
	res := &libraryResult{Iterations: o.LibraryIterations}
	if s.pg == nil {
		res.NotMeasured = "PostgreSQL skipped: " + s.pgSkip
		s.skipped = append(s.skipped, skippedArm{Arm: libraryArm, Reason: s.pgSkip})
		return res
	}
	f := libraryFenceCall()
	call, closeFence, err := f.Setup(ctx, s.libraryEnv())
	if closeFence != nil {
		defer closeFence()
	}
	if err != nil {
		res.NotMeasured = "library mode: not measured (" + err.Error() + "): the plain transactions alone ran"
		call = nil
	} else {
		res.Fence = f.Name
	}
	if err := s.libraryReps(ctx, o, call, res, progress); err != nil {
		res.NotMeasured = err.Error()
	}
	return res
}

// libraryReps creates the business table and runs o.Reps repetitions
// into res.
func (s *stack) libraryReps(ctx context.Context, o options, call fencedTx, res *libraryResult, progress io.Writer) error {
	cfg, err := pgx.ParseConfig(s.pg.dsn)
	if err != nil {
		return fmt.Errorf("bench: library: %w", err)
	}
	trips := &roundTrips{}
	cfg.Tracer = trips
	cctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("bench: library: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, libraryCreate); err != nil {
		return fmt.Errorf("bench: library: %w", err)
	}
	if _, err := conn.Exec(ctx, librarySeed, libraryRows); err != nil {
		return fmt.Errorf("bench: library: %w", err)
	}
	next := 0
	for r := 1; r <= o.Reps && ctx.Err() == nil; r++ {
		lr := s.libraryRep(ctx, conn, trips, call, r, o.LibraryIterations, &next)
		res.Reps = append(res.Reps, lr)
		fmt.Fprintf(progress, "rep %d/%d library      %-24s plain p50 %s ms p99 %s ms  fenced p50 %s ms p99 %s ms  fence call p50 %s ms p99 %s ms  errors %d+%d %s\n",
			r, o.Reps, libraryArm, fmtNum(lr.Plain.P50, 3), fmtNum(lr.Plain.P99, 3), fmtNum(lr.Fenced.P50, 3), fmtNum(lr.Fenced.P99, 3),
			fmtNum(lr.Call.P50, 3), fmtNum(lr.Call.P99, 3), lr.PlainErrors, lr.FencedErrors, lr.FirstError)
	}
	return nil
}

// libraryRep is repetition r: libraryWarmup unmeasured iterations, then n
// measured, each a plain and (with call) a fenced transaction in
// libraryOrder; *next counts the fence's calls over the phase.
func (s *stack) libraryRep(ctx context.Context, conn *pgx.Conn, trips *roundTrips, call fencedTx, r, n int, next *int) libraryRep {
	lr := libraryRep{Rep: r}
	samples := map[bool][]int64{false: make([]int64, 0, n), true: make([]int64, 0, n)}
	calls := make([]int64, 0, n)
	tripsOf := map[bool]int{}
	var callNs int64
	if call != nil {
		call = s.timedCall(call, &callNs)
	}
	for j := 0; j < libraryWarmup+n && ctx.Err() == nil; j++ {
		for _, fenced := range libraryOrder(j) {
			if fenced && call == nil {
				continue
			}
			var f fencedTx
			i := *next
			if fenced {
				f = call
				*next++
			}
			before := trips.n
			d, err := s.timeTx(ctx, conn, i, f)
			lr.note(fenced, err)
			if err == nil && j >= libraryWarmup {
				tripsOf[fenced] += trips.n - before
				samples[fenced] = append(samples[fenced], d)
				if fenced {
					calls = append(calls, callNs)
				}
			}
		}
	}
	lr.Plain, lr.Fenced, lr.Call = summarize(samples[false]), summarize(samples[true]), summarize(calls)
	lr.PlainTrips = perTx(tripsOf[false], len(samples[false]))
	lr.FencedTrips = perTx(tripsOf[true], len(samples[true]))
	return lr
}

// meanFigure is a mean, NaN when there was nothing to average (null in
// JSON).
type meanFigure float64

// MarshalJSON writes NaN as null.
func (m meanFigure) MarshalJSON() ([]byte, error) { return json.Marshal(jsonNum(float64(m))) }

// perTx is trips over n transactions, NaN for none.
func perTx(trips, n int) meanFigure {
	if n == 0 {
		return meanFigure(math.NaN())
	}
	return meanFigure(float64(trips) / float64(n))
}

// timedCall is call, writing each call's duration into *ns.
func (s *stack) timedCall(call fencedTx, ns *int64) fencedTx {
	return func(ctx context.Context, tx pgx.Tx, i int) error {
		start := s.ck.Now()
		err := call(ctx, tx, i)
		*ns = int64(clock.Since(s.ck, start) / time.Nanosecond)
		return err
	}
}

// libraryOrder is iteration j's two transactions, true for the fenced
// one: the plain one first in even iterations, the fenced one in odd.
func libraryOrder(j int) [2]bool {
	if j%2 == 1 {
		return [2]bool{true, false}
	}
	return [2]bool{false, true}
}

// note counts err against the fenced or the plain transactions.
func (r *libraryRep) note(fenced bool, err error) {
	if err == nil {
		return
	}
	if fenced {
		r.FencedErrors++
	} else {
		r.PlainErrors++
	}
	if r.FirstError == "" {
		r.FirstError = err.Error()
	}
}

// timeTx runs one business transaction on conn, with fence f inside it
// when f is set, and returns how long it took from BEGIN to COMMIT's
// answer.
func (s *stack) timeTx(ctx context.Context, conn *pgx.Conn, i int, f fencedTx) (int64, error) {
	start := s.ck.Now()
	err := businessTx(ctx, conn, i, f)
	return int64(clock.Since(s.ck, start) / time.Nanosecond), err
}

// businessTx is the business transaction of iteration i at the
// database's default isolation: f (when set), one row updated, the
// commit; any error rolls it back.
func businessTx(ctx context.Context, conn *pgx.Conn, i int, f fencedTx) (err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("bench: library: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	if f != nil {
		if err := f(ctx, tx, i); err != nil {
			return fmt.Errorf("bench: library: fence: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, libraryUpdate, i%libraryRows, "iteration"); err != nil {
		return fmt.Errorf("bench: library: update: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("bench: library: commit: %w", err)
	}
	return nil
}
