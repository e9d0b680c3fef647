package sim

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/postgres"
)

// The simulation on store/postgres (Options.Postgres): the same rounds,
// the shared store in a schema of the round's own on the machine's
// PostgreSQL (internal/pgtest: a database per test), each sidecar process
// with a postgres.Store of its own whose generation check catches a
// loss, the losses made in SQL (store/postgres/pgsnap). A round costs
// about 30 times what it costs on store/memory (every store call is a
// transaction), so the gate here runs fewer rounds than TestGatePasses:
// pgGateRounds of every fault, and pgLossRounds of the faults that meet
// the store most (losses, unknown outcomes, crashes, late applies).

// storeEnv selects the shared store of the package's other tests:
// FENCEGATE_SIM_STORE=postgres runs them all on store/postgres (a
// database of the test's own), unset or memory on store/memory.
const storeEnv = "FENCEGATE_SIM_STORE"

// withStore puts o on the store storeEnv names.
func withStore(t *testing.T, o Options) Options {
	t.Helper()
	switch v := os.Getenv(storeEnv); v {
	case "", "memory":
	case "postgres":
		if o.Postgres == "" {
			o.Postgres = pgtest.Database(t)
		}
	default:
		t.Fatalf("%s=%q: want memory or postgres", storeEnv, v)
	}
	return o
}

const (
	pgGateRounds = 200
	pgLossRounds = 100
)

// TestPostgresGate runs the gate's invariants on store/postgres: every
// fault, then the faults that meet the store most; the oracle and the
// verdict are the memory gate's (Report.Gate), the store losses, the
// unknown outcomes and the operator's settlements really happened, and
// store/memory gives the same table and histories.
func TestPostgresGate(t *testing.T) {
	dsn := pgtest.Database(t)
	for _, c := range []struct {
		name   string
		rounds int
		seed   uint64
		faults []Fault
	}{
		{"all", pgGateRounds, 11, AllFaults()},
		{"store", pgLossRounds, 12, []Fault{FaultStoreLoss, FaultLostAck, FaultCrash, FaultLate, FaultNet}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Rounds: c.rounds, Seed: c.seed, Faults: c.faults, Replicas: 3, Postgres: dsn, MaxShrinkRuns: 60, History: true}
			rep, out := run(t, o)
			if g := rep.Gate(); g != "" {
				t.Fatalf("gate failed on store/postgres: %s\n%s", g, out)
			}
			o.Postgres = ""
			if _, mem := run(t, o); mem != out {
				t.Errorf("the same run on store/memory differs:\n%s\n---\n%s", mem, out)
			}
			if !strings.HasSuffix(out, "gate: PASS\n") {
				t.Errorf("last line is not gate: PASS:\n%s", out)
			}
			for _, row := range gateRows {
				if !strings.Contains(out, "\n"+row+"  ") && !strings.HasPrefix(out, row+"  ") {
					t.Errorf("table lacks the row %q:\n%s", row, out)
				}
			}
			if rep.Accepted < rep.Rounds || rep.Unknowns == 0 || rep.Codes["STORE_UNAVAILABLE"] == 0 {
				t.Errorf("too little happened: %d accepted in %d rounds, %d unknown outcomes, codes %v", rep.Accepted, rep.Rounds, rep.Unknowns, rep.Codes)
			}
			for _, k := range []string{seenStoreLoss, seenOperator, seenLate} {
				if rep.Seen[k] < 5 {
					t.Errorf("%s: %d in %d rounds (%v)", k, rep.Seen[k], rep.Rounds, rep.Seen)
				}
			}
			t.Logf("\n%s", out)
		})
	}
}

// TestPostgresGateCanFail: on store/postgres too the gate fails when the
// sidecars use the shared store without its outside anchor: the
// postgres.Store's generation check is then never told what to expect, and
// a store emptied or put back is taken as it is.
func TestPostgresGateCanFail(t *testing.T) {
	checkFails(t, failCase{sab: SabotageUnanchored, faults: []Fault{FaultStoreLoss, FaultLostAck}, rounds: 150,
		counter: func(r *Report) int { return r.DataMismatch + r.Gaps + r.Stale }, row: "backend data that differs from the receipts",
		postgres: true, shrinkRuns: 60})
}

// TestPostgresDeterministic: on store/postgres the same seed gives the
// same table and the same histories whatever the number of workers, a
// round replays alone, and store/memory gives the seed the very same
// histories: the decisions are the same pure functions, and the store's
// generation markers and loss messages are the simulation's on both.
func TestPostgresDeterministic(t *testing.T) {
	o := Options{Rounds: 40, Seed: 42, Faults: AllFaults(), Replicas: 3, History: true, Postgres: pgtest.Database(t)}
	o.Workers = 1
	a, outA := run(t, o)
	o.Workers = 2
	b, outB := run(t, o)
	if outA != outB || a.HistoryHash == "" || a.HistoryHash != b.HistoryHash {
		t.Errorf("two runs of seed 42 on postgres differ:\n%s\n---\n%s", outA, outB)
	}
	if a.Seen[seenStoreLoss] == 0 {
		t.Errorf("no store loss in %d rounds: the SQL snapshots were not met (%v)", a.Rounds, a.Seen)
	}
	mem := o
	mem.Postgres = ""
	m, outM := run(t, mem)
	if outM != outA || m.HistoryHash != a.HistoryHash {
		t.Errorf("seed 42 on memory and on postgres differ:\n%s\n---\n%s", outM, outA)
	}
	h1, _, err := Replay(o, 7)
	if err != nil {
		t.Fatal(err)
	}
	h2, _, err := Replay(o, 7)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h1, "\n") != strings.Join(h2, "\n") || len(h1) < 3 {
		t.Errorf("round 7 does not replay on postgres:\n%s\n---\n%s", strings.Join(h1, "\n"), strings.Join(h2, "\n"))
	}
}

// TestPostgresProcessStoreFailsClosed: a sidecar process's store on
// store/postgres is refused by the postgres.Store's own generation check
// once the schema is emptied (a new generation), in the simulation's
// words and as postgres.ErrGenerationChanged; it works again once it
// expects the new marker; a restore puts the saved marker and rows back.
func TestPostgresProcessStoreFailsClosed(t *testing.T) {
	ctx := context.Background()
	pg, err := openPostgres(ctx, pgtest.Database(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pg.close(); err != nil {
			t.Error(err)
		}
	}()
	const seed = 7
	sh, err := newPGShared(pg, newSimClock(), seed)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	st, gen, err := sh.process()
	if err != nil {
		t.Fatal(err)
	}
	ps := &processStore{Store: st, gen: gen}
	g0, g1 := generationOf(seed, 0), generationOf(seed, 1)
	if got, err := ps.Generation(ctx); err != nil || got != g0 {
		t.Fatalf("first generation %q %v, want %s", got, err, g0)
	}
	if err := ps.ExpectGeneration(ctx, g0); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Pause(ctx, store.PauseInput{Resource: mainResource, Reason: store.PauseOperator, Detail: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := sh.save(); err != nil {
		t.Fatal(err)
	}

	if err := sh.lose(false); err != nil {
		t.Fatal(err)
	}
	_, err = ps.Record(ctx, mainResource)
	want := (&markerCheck{read: func() string { return g1 }, expected: g0}).enter()
	if !errors.Is(err, postgres.ErrGenerationChanged) || !errors.Is(err, errGenerationChanged) || err.Error() != want.Error() {
		t.Fatalf("Record after the store was emptied: %v\nwant %v (wrapping postgres.ErrGenerationChanged)", err, want)
	}
	if ps.GenerationLoss() == nil {
		t.Error("no loss reported after the store refused a call for one")
	}
	if err := ps.ExpectGeneration(ctx, g1); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Record(ctx, mainResource); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Record in the emptied store, its generation expected: %v, want ErrNotFound", err)
	}

	if err := sh.lose(true); err != nil {
		t.Fatal(err)
	}
	if g := sh.generation(); g != g0 {
		t.Errorf("generation after the restore %q, want the saved %s", g, g0)
	}
	if _, err := ps.Record(ctx, mainResource); !errors.Is(err, postgres.ErrGenerationChanged) {
		t.Errorf("Record after the restore, %s expected: %v, want a loss", g1, err)
	}
	st2, gen2, err := sh.process()
	if err != nil {
		t.Fatal(err)
	}
	fresh := &processStore{Store: st2, gen: gen2}
	if err := fresh.ExpectGeneration(ctx, g0); err != nil {
		t.Fatal(err)
	}
	if rec, err := fresh.Record(ctx, mainResource); err != nil || rec.Pause == nil {
		t.Errorf("the restored record: %+v %v, want the saved pause", rec, err)
	}
}
