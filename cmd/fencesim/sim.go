package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/sim"
)

// simReport is the --json form of a run.
type simReport struct {
	Seed uint64 `json:"seed"`
	*sim.Report
	Gate string `json:"gate"`
}

// runSim runs the simulation as the flags in args say and writes its
// report to out (progress lines go to stderr).
func runSim(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("[--rounds N] [--seed S] [--faults LIST] [--replicas N] [--modes proof,registry] [--seeds K] [--postgres DSN] [--json]")
	rounds := fs.Int("rounds", 1000, "rounds to run (each: one resource handed off between workers, a few writes, faults and attacks drawn from the seed)")
	seed := fs.Uint64("seed", 1, "seed: the same seed replays exactly")
	faults := fs.String("faults", "all", "fault kinds, comma-separated: "+sim.FaultNames()+"; all (the gate's kinds, which may be combined with pending ones: all,storeloss) or none")
	replicas := fs.Int("replicas", 3, "at most this many sidecar replicas share a round's store")
	modes := fs.String("modes", "proof,registry", "status modes rounds draw from")
	workers := fs.Int("workers", 0, "rounds run in parallel (0: one per CPU); the result does not depend on it")
	seeds := fs.Int("seeds", 1, "soak: run this many seeds (seed, seed+1, ...), stop at the first failing one")
	history := fs.Bool("history", false, "also print a hash of every round's event history (two runs of a seed print the same)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	only := fs.Int("round", -1, "replay only this round of the seed and print its script and history")
	pgDSN := fs.String("postgres", "", "run every round's shared fenced store on store/postgres, in a schema of its own (dropped at the end) of the PostgreSQL database this DSN names; empty: store/memory (a seed's history is the same on both)")
	sabotage := fs.String("sabotage", "", "break one part on purpose to see the gate fail: "+sabotageNames()+" (a check of the gate itself)")
	if err := parse(fs, args); err != nil {
		return err
	}
	fl, err := sim.ParseFaults(*faults)
	if err != nil {
		return &exitError{2, err}
	}
	var ml []string
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "" {
			ml = append(ml, m)
		}
	}
	sab := sim.Sabotage(*sabotage)
	if sab != sim.SabotageNone && !slices.Contains(sim.Sabotages(), sab) {
		return &exitError{2, fmt.Errorf("--sabotage %q (want %s)", *sabotage, sabotageNames())}
	}
	if *rounds < 1 || *replicas < 1 || *seeds < 1 || *workers < 0 {
		return &exitError{2, errors.New("--rounds, --replicas and --seeds must be at least 1, --workers at least 0")}
	}
	if *only >= 0 {
		o := sim.Options{Rounds: 1, Seed: *seed, Faults: fl, Replicas: *replicas, Modes: ml, Sabotage: sab, Postgres: *pgDSN}
		history, violations, err := sim.Replay(o, *only)
		if errors.Is(err, sim.ErrOptions) {
			return &exitError{2, err}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "round %d of seed %d\n", *only, *seed)
		for _, l := range history {
			fmt.Fprintln(out, l)
		}
		if len(violations) > 0 {
			for _, v := range violations {
				fmt.Fprintln(out, "violation:", v)
			}
			fmt.Fprintf(out, "gate: FAIL %d violations in round %d\n", len(violations), *only)
			return &exitError{1, fmt.Errorf("gate: FAIL (round %d of seed %d)", *only, *seed)}
		}
		fmt.Fprintln(out, "gate: PASS")
		return nil
	}
	// Rounds allocate small short-lived worlds: a lazier collector saves
	// about a tenth of the run's CPU (the 100,000-round gate's budget).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for i := range *seeds {
		o := sim.Options{Rounds: *rounds, Seed: *seed + uint64(i), Faults: fl, Replicas: *replicas, Modes: ml, Postgres: *pgDSN,
			Workers: *workers, History: *history, Sabotage: sab}
		if !*quiet {
			o.Progress = os.Stderr
			fmt.Fprintf(os.Stderr, "sim: seed %d, %d rounds\n", o.Seed, o.Rounds)
		}
		rep, err := sim.Run(ctx, o)
		if errors.Is(err, sim.ErrOptions) {
			return &exitError{2, err}
		}
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			gate := "PASS"
			if g := rep.Gate(); g != "" {
				gate = "FAIL " + g
			}
			if err := enc.Encode(simReport{Seed: o.Seed, Report: rep, Gate: gate}); err != nil {
				return err
			}
		} else {
			if *seeds > 1 {
				fmt.Fprintf(out, "seed %d\n", o.Seed)
			}
			rep.Write(out)
		}
		if g := rep.Gate(); g != "" {
			return &exitError{1, fmt.Errorf("gate: FAIL %s (seed %d)", g, o.Seed)}
		}
	}
	return nil
}

func sabotageNames() string {
	var n []string
	for _, s := range sim.Sabotages() {
		n = append(n, string(s))
	}
	return strings.Join(n, ", ")
}
