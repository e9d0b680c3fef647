package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestIssue23Targets(t *testing.T) {
	known := map[string]bool{libraryArm: true}
	for _, f := range fencegateArms() {
		known[f.name()] = true
	}
	ids := map[string]bool{}
	for _, sp := range append(issue22Targets(), issue23Targets()...) {
		if ids[sp.ID] {
			t.Errorf("target %s twice", sp.ID)
		}
		ids[sp.ID] = true
	}
	want := map[string]float64{"postgres-x64": 0.5, "postgres-p99-1k": 3, "proxy-cpu-postgres": 0.1, "library-p50": 0.3, "library-p99": 1}
	for _, sp := range issue23Targets() {
		th, ok := want[sp.ID]
		if !ok {
			t.Errorf("unexpected target %s", sp.ID)
			continue
		}
		delete(want, sp.ID)
		if sp.Threshold != th {
			t.Errorf("%s: threshold %v, want %v", sp.ID, sp.Threshold, th)
		}
		for _, a := range append([]string{sp.Judged}, sp.Shown...) {
			if !known[a] {
				t.Errorf("%s: arm %q is no arm the bench runs", sp.ID, a)
			}
		}
	}
	for id := range want {
		t.Errorf("no target %s", id)
	}
}

// pgTargetRuns adds postgres arms' runs to targetRuns: the proof arm at
// 0.5x plain at 64 workers (the bound), 2 ms added p99 and proxy CPU 0.1
// over the plain proxy's at 1,000/s (the bound); the registry arm at
// 0.4x, 3.5 ms and 0.25 over.
func pgTargetRuns() []runRecord {
	runs := targetRuns()
	for _, rep := range []int{1, 2, 3} {
		for _, c := range []struct {
			arm           string
			rps, p99, cpu float64
		}{{armPgProof, 500, 2, 0.2}, {armPgRegistry, 400, 3.5, 0.35}} {
			runs = append(runs, runRecord{Rep: rep, Load: "closed-64", Arm: c.arm, Workers: 64, Requests: int(c.rps) * 2, Seconds: 2, RPS: c.rps,
				Latency: latencySummary{P50: 1, P99: 9}, CPU: map[string]float64{"proxy": 0.3}})
			direct, _ := findRun(runs, openFixedLoad, "direct", rep)
			runs = append(runs, runRecord{Rep: rep, Load: openFixedLoad, Arm: c.arm, Workers: 64, TargetRate: openFixedRate, Requests: 2000, Seconds: 2, RPS: 1000,
				Latency: latencySummary{P50: 1, P99: direct.Latency.P99 + c.p99}, CPU: map[string]float64{"proxy": c.cpu}})
		}
	}
	return runs
}

func TestEvaluatePostgresTargets(t *testing.T) {
	in := targetFixture()
	in.Runs = pgTargetRuns()
	v := verdicts(evaluateTargets(issue23Targets(), in))
	for key, want := range map[string]string{
		"postgres-x64 " + armPgProof:          verdictPass,
		"postgres-x64 " + armPgRegistry:       verdictMiss,
		"postgres-p99-1k " + armPgProof:       verdictPass,
		"postgres-p99-1k " + armPgRegistry:    verdictMiss,
		"proxy-cpu-postgres " + armPgProof:    verdictPass,
		"proxy-cpu-postgres " + armPgRegistry: verdictMiss,
		"library-p50 " + libraryArm:           verdictNone,
	} {
		if got := v[key]; got.Verdict != want {
			t.Errorf("%s: %s (%+v), want %s", key, got.Verdict, got.Measured, want)
		}
	}
	if m := v["postgres-x64 "+armPgProof].Measured; m.Median != 0.5 || m.N != 3 {
		t.Errorf("postgres-x64: measured %+v, want 0.5 over 3 repetitions", m)
	}
}

func TestSkippedArmIsNotMeasured(t *testing.T) {
	in := targetFixture()
	in.Runs = pgTargetRuns() // runs present, yet the arm is named skipped: the skip wins
	in.Skipped = skippedReasons([]skippedArm{{Arm: armPgProof, Reason: "bench: PostgreSQL not reachable at postgres://x"}})
	v := verdicts(evaluateTargets(issue23Targets(), in))
	for _, id := range []string{"postgres-x64", "postgres-p99-1k", "proxy-cpu-postgres"} {
		r := v[id+" "+armPgProof]
		if r.Verdict != verdictNone || r.Why != "arm skipped: bench: PostgreSQL not reachable at postgres://x" {
			t.Errorf("%s on the skipped arm: %s %q, want not measured with the reason", id, r.Verdict, r.Why)
		}
	}
	if r := v["postgres-x64 "+armPgRegistry]; r.Verdict != verdictMiss {
		t.Errorf("the arm not skipped: %s, want its own verdict MISS", r.Verdict)
	}
}

// libraryFixture is three repetitions whose fenced transactions add
// 0.2, 0.3 and 0.4 ms at p50 (median 0.3, the bound) and 1.5 ms at p99.
func libraryFixture() *libraryResult {
	lib := &libraryResult{Fence: "pgfence.Apply", Iterations: 1000}
	for i, add := range []float64{0.2, 0.3, 0.4} {
		lib.Reps = append(lib.Reps, libraryRep{Rep: i + 1,
			Plain:  latencySummary{P50: 1, P99: 2, P999: 3},
			Fenced: latencySummary{P50: 1 + add, P99: 3.5, P999: 5},
			Call:   latencySummary{P50: 0.25, P99: 1.25}, PlainTrips: 3, FencedTrips: 11})
	}
	return lib
}

func TestLibraryTargets(t *testing.T) {
	judge := func(lib *libraryResult) map[string]targetResult {
		return verdicts(evaluateTargets(issue23Targets(), targetInput{Library: lib}))
	}
	v := judge(libraryFixture())
	p50, p99 := v["library-p50 "+libraryArm], v["library-p99 "+libraryArm]
	if p50.Verdict != verdictPass || math.Abs(p50.Measured.Median-0.3) > 1e-9 || p50.Measured.N != 3 {
		t.Errorf("library-p50: %s %+v, want PASS at the bound 0.3 over 3 repetitions", p50.Verdict, p50.Measured)
	}
	if p99.Verdict != verdictMiss || p99.Measured.Median != 1.5 {
		t.Errorf("library-p99: %s %+v, want MISS at 1.5", p99.Verdict, p99.Measured)
	}
	if !strings.Contains(p50.Why, "pgfence.Apply") {
		t.Errorf("library-p50 why %q does not name the fence", p50.Why)
	}

	failed := libraryFixture()
	failed.Reps[1].FencedErrors, failed.Reps[1].FirstError = 2, "bench: library: fence: 40001"
	if r := judge(failed)["library-p50 "+libraryArm]; r.Verdict != verdictMiss || !strings.Contains(r.Why, "1/3 repetitions with failed transactions") {
		t.Errorf("failed transactions: %s %q, want MISS saying so", r.Verdict, r.Why)
	}

	landed := &libraryResult{NotMeasured: "library mode: not measured (pgfence not landed): the plain transactions alone ran", Iterations: 10,
		Reps: []libraryRep{{Rep: 1, Plain: latencySummary{P50: 1, P99: 2}, Fenced: summarize(nil)}}}
	if r := judge(landed)["library-p99 "+libraryArm]; r.Verdict != verdictNone || !strings.Contains(r.Why, "pgfence not landed") {
		t.Errorf("no fence: %s %q, want not measured, pgfence not landed", r.Verdict, r.Why)
	}
	if r := judge(nil)["library-p50 "+libraryArm]; r.Verdict != verdictNone || !strings.Contains(r.Why, "not run") {
		t.Errorf("no phase: %s %q, want not measured", r.Verdict, r.Why)
	}
	noFenced := &libraryResult{Fence: "f", Reps: []libraryRep{{Rep: 1, Plain: latencySummary{P50: 1}, Fenced: summarize(nil)}}}
	if r := judge(noFenced)["library-p50 "+libraryArm]; r.Verdict != verdictNone {
		t.Errorf("no fenced sample: %s, want not measured, never PASS without data", r.Verdict)
	}
	faster := libraryFixture()
	for i := range faster.Reps {
		faster.Reps[i].Fenced.P50 = faster.Reps[i].Plain.P50 - 0.5
	}
	if r := judge(faster)["library-p50 "+libraryArm]; r.Verdict != verdictNone {
		t.Errorf("fenced 0.5 ms faster than plain (noise beyond the bound): %s, want not measured", r.Verdict)
	}
}

func TestRenderLibraryAndSkipped(t *testing.T) {
	rep := sampleReport()
	rep.Library = libraryFixture()
	rep.Skipped = []skippedArm{{Arm: armPgProof, Reason: "bench: PostgreSQL not reachable | down"}}
	md := renderMarkdown(rep)
	for _, want := range []string{
		"## Library mode: added latency per transaction",
		"Fence call: `pgfence.Apply`.",
		"| 2 | 1.000 | 2.000 | 3.000 | 1.300 | 3.500 | 5.000 | 0.300 | 1.500 | 0.250 | 1.250 | 3.0 / 11.0 | 0 |",
		"**Skipped arms**: fg-postgres-proof-EdDSA (bench: PostgreSQL not reachable / down).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	rep.Library = &libraryResult{NotMeasured: "library mode: not measured (pgfence not landed): the plain transactions alone ran", Iterations: 5,
		Reps: []libraryRep{{Rep: 1, Plain: latencySummary{P50: 1, P99: 2, P999: 3}, Fenced: summarize(nil), Call: summarize(nil), PlainTrips: 3, FencedTrips: meanFigure(math.NaN()), PlainErrors: 1, FirstError: "x"}}}
	if b, err := json.Marshal(rep.Library); err != nil || !strings.Contains(string(b), `"fencedRoundTrips":null`) {
		t.Errorf("results.json of a phase without fenced transactions: %s, %v", b, err)
	}
	md = renderMarkdown(rep)
	for _, want := range []string{"**library mode: not measured (pgfence not landed): the plain transactions alone ran**", "| 1 | 1.000 | 2.000 | 3.000 | – | – | – | – | – | – | – | 3.0 / – | 1: x |"} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	rep.Library, rep.Skipped = nil, nil
	md = renderMarkdown(rep)
	if strings.Contains(md, "Library mode") || strings.Contains(md, "Skipped arms") {
		t.Error("RESULTS.md has a library section or skipped arms without either")
	}
}

func TestNeedsPostgres(t *testing.T) {
	for re, want := range map[string]bool{"": true, "postgres": true, "fg-postgres-proof": true, "library": true, "redis": false, "^fg-bolt": false} {
		if got := needsPostgres(regexp.MustCompile(re)); got != want {
			t.Errorf("needsPostgres(%q) = %v, want %v", re, got, want)
		}
	}
}

func TestLibraryOrderAlternates(t *testing.T) {
	fencedFirst := 0
	for j := range 10 {
		o := libraryOrder(j)
		if o[0] == o[1] {
			t.Fatalf("iteration %d: %v, want one plain and one fenced", j, o)
		}
		if o[0] {
			fencedFirst++
		}
	}
	if fencedFirst != 5 {
		t.Errorf("fenced first in %d of 10 iterations, want 5", fencedFirst)
	}
}

func TestPartialRunSaid(t *testing.T) {
	rep := sampleReport()
	if strings.Contains(renderMarkdown(rep), "A partial run") {
		t.Error("a full run called partial")
	}
	rep.Options.Arms, rep.Options.NoRegistryPhases = "postgres", true
	want := "**A partial run**: only the arms and phases `-arms postgres` matches, with the baselines (direct, plain-proxy); no handoffs nor registry throughput (-no-registry-phases)."
	if md := renderMarkdown(rep); !strings.Contains(md, want) {
		t.Errorf("RESULTS.md lacks %q", want)
	}
}
