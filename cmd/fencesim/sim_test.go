package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSimCommand(t *testing.T) {
	var out strings.Builder
	if err := runSim(context.Background(), []string{"--rounds", "60", "--seed", "4", "--quiet"}, &out); err != nil {
		t.Fatalf("sim: %v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.HasSuffix(s, "\ngate: PASS\n") {
		t.Errorf("output does not end with gate: PASS:\n%s", s)
	}
	for _, row := range []string{"rounds  ", "writes attempted", "stale accepted", "forged accepted", "segment gaps accepted",
		"regressions accepted", "max virtual time in UNKNOWN", "handoff latency p50/p99 (virtual)"} {
		if !strings.Contains(s, row) {
			t.Errorf("table lacks %q:\n%s", row, s)
		}
	}
}

func TestSimCommandJSONAndSoak(t *testing.T) {
	var out strings.Builder
	if err := runSim(context.Background(), []string{"--rounds", "20", "--seeds", "2", "--json", "--quiet", "--faults", "net,crash"}, &out); err != nil {
		t.Fatalf("sim: %v\n%s", err, out.String())
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for want := uint64(1); want <= 2; want++ {
		var r struct {
			Seed     uint64
			Rounds   int
			Accepted int
			Gate     string
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("seed %d: %v\n%s", want, err, out.String())
		}
		if r.Seed != want || r.Rounds != 20 || r.Accepted == 0 || r.Gate != "PASS" {
			t.Errorf("report %+v", r)
		}
	}
}

func TestSimCommandReplayRound(t *testing.T) {
	var a, b strings.Builder
	for _, out := range []*strings.Builder{&a, &b} {
		if err := runSim(context.Background(), []string{"--seed", "8", "--round", "3", "--quiet"}, out); err != nil {
			t.Fatalf("sim --round: %v\n%s", err, out.String())
		}
	}
	if a.String() != b.String() || !strings.HasPrefix(a.String(), "round 3 of seed 8\nconfig status=") || !strings.Contains(a.String(), "\nscript #1 acquire") || !strings.HasSuffix(a.String(), "gate: PASS\n") {
		t.Errorf("replay of round 3:\n%s\n---\n%s", a.String(), b.String())
	}
}

func TestSimCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--faults", "net,nope"}, {"--rounds", "0"}, {"--modes", "proof,maybe"}, {"--seeds", "0"}, {"--sabotage", "nope"}, {"extra"}} {
		var ee *exitError
		err := runSim(context.Background(), append(args, "--quiet"), &strings.Builder{})
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want exit code 2", args, err)
		}
	}
}

// TestSimCommandFails: a broken part makes the command fail with exit
// code 1, after the table and a gate: FAIL line naming what broke.
func TestSimCommandFails(t *testing.T) {
	var out strings.Builder
	err := runSim(context.Background(), []string{"--rounds", "40", "--sabotage", "trust-forger", "--faults", "forged", "--quiet"}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("sabotaged run: %v, want exit code 1\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "\ngate: FAIL ") || !strings.Contains(s, "forged writes accepted") || !strings.Contains(s, "shortest failing history") {
		t.Errorf("output:\n%s", s)
	}
}
