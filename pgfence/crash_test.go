package pgfence_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store/postgres"
)

// crashChildEnv makes the test binary the crash child: it applies the
// fence and the business write in one transaction, says so on stdout,
// and waits to be killed before it commits.
const crashChildEnv = "PGFENCE_CRASH_CHILD"

// TestProcessKilledBeforeCommitLeavesNeither: a service process applies
// the fence (accepted) and its business write in one transaction and is
// killed with SIGKILL before it commits. PostgreSQL rolls the
// transaction back: no business row, no record, no receipt. The same
// request then commits on its first try, as a new write.
func TestProcessKilledBeforeCommitLeavesNeither(t *testing.T) {
	w := newWorld(t)
	a := w.lease(5)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", "PGFENCE_DSN="+w.dsn,
		"PGFENCE_BUNDLE="+w.bundle, "PGFENCE_GRANT="+a.grant, "PGFENCE_PROOF="+a.proof, "PGFENCE_CALLER="+a.g.Owner)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "APPLIED" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("crash child said %q (%v), want APPLIED", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoSession(t, w)
	if total, _ := w.row(); total != -1 {
		t.Fatalf("the killed process's business row is there (total %d)", total)
	}
	if rec := w.record(); rec.Exists() {
		t.Fatalf("the killed process's fence record is there: %+v", rec)
	}
	if rcs := w.receipts(); len(rcs) != 0 {
		t.Fatalf("the killed process's receipt is there: %+v", rcs)
	}
	if _, err := w.write(a.request(1, "crash"), 7); err != nil {
		t.Fatalf("the same write after the crash: %v, want accepted", err)
	}
}

// waitNoSession waits until PostgreSQL has ended the killed child's
// session (its transaction rolled back): no other session of the
// database holds a transaction open.
func waitNoSession(t *testing.T, w *world) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*timeUnit)
	defer cancel()
	for {
		var n int
		err := w.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND xact_start IS NOT NULL AND application_name = 'pgfence-crash-child'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the killed child's transaction is still open after 30s")
		}
		sleep(ctx)
	}
}

// crashChild is the child's whole run (TestMain calls it).
func crashChild() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	cfg, err := pgxpool.ParseConfig(os.Getenv("PGFENCE_DSN"))
	if err != nil {
		fail(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "pgfence-crash-child"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		fail(err)
	}
	st, err := postgres.New(ctx, pool, postgres.Options{})
	if err != nil {
		fail(err)
	}
	f, err := pgfence.New(ctx, st, pgfence.WithTrustBundle(os.Getenv("PGFENCE_BUNDLE")))
	if err != nil {
		fail(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		fail(err)
	}
	req := pgfence.Request{Resource: resource, Caller: os.Getenv("PGFENCE_CALLER"), Grant: os.Getenv("PGFENCE_GRANT"),
		Status: os.Getenv("PGFENCE_PROOF"), Segment: 1, Payload: []byte("crash")}
	if _, err := f.Apply(ctx, tx, req); err != nil {
		fail(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO invoices (batch, total, applied) VALUES ('7', 7, 1)`); err != nil {
		fail(err)
	}
	fmt.Println("APPLIED")
	select {} // killed here, before Commit
}

var _ pgx.Tx
