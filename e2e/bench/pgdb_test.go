package main

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/proxy/server"
)

// databaseExists asks the admin server whether name exists.
func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminDSN())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", pgtest.AdminDSN(), err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// newBenchDatabase is a database made as a bench run makes it, dropped
// when t ends if the test has not dropped it.
func newBenchDatabase(t *testing.T) *benchDatabase {
	t.Helper()
	d, err := createBenchDatabase(context.Background(), pgtest.AdminDSN(), t.TempDir())
	if err != nil {
		t.Fatalf("createBenchDatabase: %v", err)
	}
	t.Cleanup(func() { _ = d.drop() })
	return d
}

func TestBenchDatabaseCreatedAndDropped(t *testing.T) {
	d := newBenchDatabase(t)
	if !regexp.MustCompile(`^fgbench_[0-9a-f]{16}$`).MatchString(d.name) {
		t.Errorf("database name %q", d.name)
	}
	b, err := os.ReadFile(d.dsnFile)
	if err != nil || string(b) != d.dsn+"\n" {
		t.Fatalf("DSN file %s: %q, %v; want %q", d.dsnFile, b, err, d.dsn+"\n")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatalf("connect to the bench database: %v", err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != d.name {
		t.Errorf("connected to %q (%v), want %q", db, err, d.name)
	}
	// Left open: drop ends it (WITH (FORCE)), as a sidecar's pool at the end of a run.
	if err := d.drop(); err != nil {
		t.Fatalf("drop: %v", err)
	}
	_ = conn.Close(ctx)
	if databaseExists(t, d.name) {
		t.Errorf("database %s still exists after drop", d.name)
	}
}

// closedPortDSN is a DSN of a loopback port nothing listens on.
func closedPortDSN(t *testing.T) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable&connect_timeout=2"
}

func TestUnreachablePostgresSkipsItsArms(t *testing.T) {
	t.Setenv("FENCEGATE_POSTGRES_DSN", closedPortDSN(t))
	s := &stack{ck: clock.Real(), dir: t.TempDir(), registries: map[string]*registryProc{}}
	s.startPostgres(context.Background())
	if s.pg != nil || !strings.Contains(s.pgSkip, "PostgreSQL not reachable") {
		t.Fatalf("pg %v, skip %q: want no database and why", s.pg, s.pgSkip)
	}
	arms, err := s.buildArms(regexp.MustCompile("postgres"))
	if err != nil {
		t.Fatalf("buildArms: %v", err)
	}
	if len(arms) != 2 || arms[0].Name != "direct" || arms[1].Name != "plain-proxy" {
		t.Errorf("arms %v, want the baselines alone", arms)
	}
	lib := s.runLibrary(context.Background(), options{Reps: 1, LibraryIterations: 10}, regexp.MustCompile("postgres"), io.Discard)
	if lib == nil || !strings.HasPrefix(lib.NotMeasured, "PostgreSQL skipped: ") || len(lib.Reps) != 0 {
		t.Errorf("library phase without PostgreSQL: %+v", lib)
	}
	rep := &report{}
	s.noteSkipped(rep, io.Discard)
	var names []string
	for _, sk := range rep.Skipped {
		names = append(names, sk.Arm)
		if sk.Reason != s.pgSkip {
			t.Errorf("%s skipped for %q, want %q", sk.Arm, sk.Reason, s.pgSkip)
		}
	}
	if got := strings.Join(names, " "); got != armPgRegistry+" "+armPgProof+" "+libraryArm {
		t.Errorf("skipped %s", got)
	}
	if len(rep.Notes) != 3 || !strings.HasPrefix(rep.Notes[0], armPgRegistry+": skipped: ") {
		t.Errorf("notes %q", rep.Notes)
	}
}

func TestPostgresSidecarConfigValidates(t *testing.T) {
	dir := t.TempDir()
	dsn := dir + "/postgres.dsn"
	if err := os.WriteFile(dsn, []byte("postgres://postgres@127.0.0.1:5432/x?sslmode=disable\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := &registryProc{alg: "EdDSA", keys: dir, url: "http://127.0.0.1:1"}
	sp := sidecarSpec{name: armPgProof, store: "postgres", status: "proof", reg: reg, pgDSNFile: dsn}
	cfg := dir + "/proxy.yaml"
	if err := os.WriteFile(cfg, []byte(sidecarYAML(sp, "http://127.0.0.1:2", "", dir+"/data")), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Check(cfg)
	if err != nil {
		t.Fatalf("the postgres arm's configuration: %v", err)
	}
	if c.Store.Backend != "postgres" || c.Store.Postgres.DSNFile != dsn || c.Store.Postgres.Schema != "fg_postgres_proof_eddsa" || c.Store.Service != armPgProof {
		t.Errorf("store section %+v", c.Store)
	}
}

func TestLibraryPhaseOnPostgres(t *testing.T) {
	d := newBenchDatabase(t)
	s := &stack{ck: clock.Real(), pg: d}
	ctx := context.Background()
	// The fence stand-in writes a row per call in the business
	// transaction, and fails on every 7th: those transactions must roll
	// back whole, the business row's update with them.
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE TABLE fence_calls (i integer PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	errFence := errors.New("fence refused")
	call := func(ctx context.Context, tx pgx.Tx, i int) error {
		if _, err := tx.Exec(ctx, "INSERT INTO fence_calls VALUES ($1)", i); err != nil {
			return err
		}
		if i%7 == 6 {
			return errFence
		}
		return nil
	}
	o := options{Reps: 2, LibraryIterations: 30}
	res := &libraryResult{Iterations: o.LibraryIterations}
	if err := s.libraryReps(ctx, o, call, res, io.Discard); err != nil {
		t.Fatalf("libraryReps: %v", err)
	}
	perRep := libraryWarmup + o.LibraryIterations
	calls, failed := 2*perRep, 0
	for i := range calls {
		if i%7 == 6 {
			failed++
		}
	}
	if len(res.Reps) != 2 {
		t.Fatalf("%d repetitions, want 2", len(res.Reps))
	}
	gotFailed := 0
	for _, r := range res.Reps {
		gotFailed += r.FencedErrors
		if r.PlainErrors != 0 || math.IsNaN(r.Plain.P50) || math.IsNaN(r.Fenced.P99) || r.Plain.P50 <= 0 {
			t.Errorf("rep %d: %+v", r.Rep, r)
		}
		// BEGIN, UPDATE, COMMIT; the stand-in fence adds its INSERT.
		if r.PlainTrips != 3 || r.FencedTrips != 4 {
			t.Errorf("rep %d: %v round trips per plain transaction, %v per fenced one; want 3 and 4", r.Rep, r.PlainTrips, r.FencedTrips)
		}
		// Each call is timed inside its transaction: never longer, at any percentile.
		if !(r.Call.P50 > 0) || r.Call.P50 > r.Fenced.P50 || r.Call.P99 > r.Fenced.P99 {
			t.Errorf("rep %d: fence call p50 %v p99 %v against its transactions' %v %v", r.Rep, r.Call.P50, r.Call.P99, r.Fenced.P50, r.Fenced.P99)
		}
		if !strings.Contains(r.FirstError, "fence refused") {
			t.Errorf("rep %d: first error %q", r.Rep, r.FirstError)
		}
	}
	if gotFailed != failed {
		t.Errorf("%d fenced transactions failed, want %d", gotFailed, failed)
	}
	var committedCalls, distinct, updates int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT i) FROM fence_calls").Scan(&committedCalls, &distinct); err != nil {
		t.Fatal(err)
	}
	if committedCalls != calls-failed || distinct != committedCalls {
		t.Errorf("%d fence rows committed (%d distinct), want %d: one per fenced transaction that committed, each its own i", committedCalls, distinct, calls-failed)
	}
	if err := conn.QueryRow(ctx, "SELECT sum(n) FROM bench_business").Scan(&updates); err != nil {
		t.Fatal(err)
	}
	if want := 2*calls - failed; updates != want {
		t.Errorf("business rows updated %d times, want %d (every plain and every committed fenced transaction)", updates, want)
	}
}

func TestLibraryPhaseWithoutFenceRunsPlainOnly(t *testing.T) {
	// No registry: pgfence's setup fails, the plain transactions still run.
	s := &stack{ck: clock.Real(), pg: newBenchDatabase(t), registries: map[string]*registryProc{}}
	res := s.runLibrary(context.Background(), options{Reps: 1, LibraryIterations: 10}, regexp.MustCompile(""), io.Discard)
	if res == nil || res.Fence != "" || !strings.Contains(res.NotMeasured, "library mode: not measured (bench: library fence setup: no EdDSA registry in this run)") {
		t.Fatalf("library phase: %+v, want not measured with the setup's error", res)
	}
	if len(res.Reps) != 1 || math.IsNaN(res.Reps[0].Plain.P50) || !math.IsNaN(res.Reps[0].Fenced.P50) {
		t.Errorf("reps %+v: want the plain transactions measured and no fenced one", res.Reps)
	}
	if s.runLibrary(context.Background(), options{Reps: 1, LibraryIterations: 10}, regexp.MustCompile("^fg-bolt"), io.Discard) != nil {
		t.Error("the library phase ran though -arms does not select it")
	}
}

func TestPostgresBackendCPU(t *testing.T) {
	d := newBenchDatabase(t)
	s := &stack{ck: clock.Real(), pg: d}
	defer s.stopPostgres(func(string, ...any) {})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	pids, err := s.pgBackendPids(ctx)
	if err != nil {
		t.Fatalf("pgBackendPids: %v", err)
	}
	if len(pids) != 1 || pids[0] != pid {
		t.Fatalf("backends of %s: %v, want the one connection's %d (not the monitoring connection's)", d.name, pids, pid)
	}
	start, done := s.pgCPUHooks(ctx, &arm{Store: "postgres"})
	start()
	// Work the backend until the kernel has charged it a tick.
	cpu := map[string]float64{}
	for range 200 {
		if _, err := conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 200000)"); err != nil {
			t.Fatal(err)
		}
		if done(1000, cpu); cpu["postgres"] > 0 {
			break
		}
	}
	if !(cpu["postgres"] > 0) {
		t.Errorf("postgres CPU %v after work on its backend, want > 0", cpu)
	}
	other := map[string]float64{}
	s2start, s2done := s.pgCPUHooks(ctx, &arm{Store: "redis"})
	s2start()
	s2done(1000, other)
	if len(other) != 0 {
		t.Errorf("a redis arm got %v", other)
	}
	var gone pgBackendCPU
	gone.start = map[int]float64{1 << 30: 0}
	if _, ok := gone.seconds(); ok {
		t.Error("a process that is gone read as running")
	}
}

func TestLoopbackServer(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://postgres@127.0.0.1:5432/x":     true,
		"postgres://postgres@localhost/x":          true,
		"postgres://postgres@[::1]:5432/x":         true,
		"host=/var/run/postgresql user=postgres":   true,
		"postgres://postgres@db.example.com:5432/": false,
		"postgres://postgres@10.0.0.5:5432/x":      false,
	} {
		if got := loopbackServer(dsn); got != want {
			t.Errorf("loopbackServer(%q) = %v, want %v", dsn, got, want)
		}
	}
}

func TestReadPostgresTotals(t *testing.T) {
	d := newBenchDatabase(t)
	s := &stack{ck: clock.Real(), pg: d}
	defer s.stopPostgres(func(string, ...any) {})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tot := s.readPostgresTotals(ctx, []string{armPgProof})
	if tot == nil || tot.Err != "" {
		t.Fatalf("totals %+v", tot)
	}
	if tot.Rollbacks != 2 || tot.Commits < 5 {
		t.Errorf("%d committed, %d rolled back; want at least 5 and exactly 2", tot.Commits, tot.Rollbacks)
	}
	line := tot.line()
	for _, want := range []string{d.name, armPgProof + " and the library phase", "2 rolled back"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}

func TestPostgresTotalsReport(t *testing.T) {
	tot := &postgresTotals{Database: "fgbench_x", Arms: []string{armPgRegistry, armPgProof}, Commits: 300, Rollbacks: 100}
	if got := tot.abortedShare(); got != 0.25 {
		t.Errorf("aborted share %v, want 0.25", got)
	}
	if !math.IsNaN((&postgresTotals{}).abortedShare()) {
		t.Error("no transactions: want NaN")
	}
	rep := sampleReport()
	rep.Postgres = tot
	md := renderMarkdown(rep)
	want := "database fgbench_x (fg-postgres-registry-EdDSA, fg-postgres-proof-EdDSA and the library phase, every phase and warm-up included): 300 transactions committed, 100 rolled back: 25.0% of them aborted"
	if !strings.Contains(md, "## PostgreSQL transactions") || !strings.Contains(md, want) {
		t.Errorf("RESULTS.md lacks the PostgreSQL section with %q:\n%s", want, md)
	}
	failed := &postgresTotals{Database: "fgbench_x", Err: "bench: 2 backends still on fgbench_x after 10s"}
	if got := failed.line(); !strings.Contains(got, "counts not read: bench: 2 backends") || strings.Contains(got, "committed") {
		t.Errorf("unread totals: %q", got)
	}
}
