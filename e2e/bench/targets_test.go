package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// targetRuns are three repetitions of closed-16, closed-64 and open-1k
// runs shaped so that each target lands on a known verdict, several on
// their boundary.
func targetRuns() []runRecord {
	var runs []runRecord
	add := func(rep int, load, armName string, rps, p99 float64, cpu map[string]float64) *runRecord {
		r := runRecord{Rep: rep, Load: load, Arm: armName, Workers: 64, Requests: int(rps) * 2, Seconds: 2, RPS: rps,
			Latency: latencySummary{P50: 1, P99: p99, P999: p99 + 1}, CPU: cpu}
		if load == openFixedLoad {
			r.TargetRate = openFixedRate
		}
		runs = append(runs, r)
		return &runs[len(runs)-1]
	}
	for i, rep := range []int{1, 2, 3} {
		pick := func(vs ...float64) float64 { return vs[i] }
		for _, load := range []string{"closed-16", "closed-64"} {
			add(rep, load, "direct", 3000, 2, nil)
			add(rep, load, "plain-proxy", 1000, 3, map[string]float64{"proxy": 0.1})
			bolt := pick(600, 500, 700) // ratios 0.6, 0.5, 0.7: median 0.6, the bound
			if load == "closed-16" {
				bolt = 400 // 0.4, the bound
			}
			add(rep, load, armBoltProof, bolt, 9, map[string]float64{"proxy": 0.3})
			add(rep, load, armBoltRegistry, 590, 9, map[string]float64{"proxy": 0.3}) // 0.59
			add(rep, load, armRedisProof, 450, 9, map[string]float64{"proxy": 0.3, "redis": 0.02})
			add(rep, load, armRedisRegistry, 1100, 9, map[string]float64{"proxy": 0.3, "redis": 0.02})
			add(rep, load, armMemProof, pick(950, 900, 880), 4, map[string]float64{"proxy": 0.2}) // median 0.9, the bound
		}
		// open-1k: direct p99 2, 3, 4.
		add(rep, openFixedLoad, "direct", 1000, pick(2, 3, 4), nil)
		add(rep, openFixedLoad, "plain-proxy", 1000, pick(2.5, 3.5, 4.5), map[string]float64{"proxy": 0.1})
		// Added p99 3, 3, 3.5: median 3, the bound; proxy CPU 0.1 over the plain proxy's, the bound.
		add(rep, openFixedLoad, armBoltProof, 1000, pick(5, 6, 7.5), map[string]float64{"proxy": 0.2})
		// Added p99 3.01 in every repetition; CPU 0.25 over.
		add(rep, openFixedLoad, armBoltRegistry, 1000, pick(5.01, 6.01, 7.01), map[string]float64{"proxy": 0.35})
		// Fell behind in every repetition: rate not kept.
		r := add(rep, openFixedLoad, armRedisRegistry, 990, 500, map[string]float64{"proxy": 0.3, "redis": 0.02})
		r.Missed = 100
		// A rejected request in the second repetition.
		r = add(rep, openFixedLoad, armMemProof, 1000, pick(2.1, 3.1, 4.1), map[string]float64{"proxy": 0.15})
		if rep == 2 {
			r.Non2xx = 1
		}
	}
	return runs
}

// targetFixture is targetRuns with its plan, handoffs and throughput.
func targetFixture() targetInput {
	runs := targetRuns()
	names := []string{"direct", "plain-proxy", armBoltProof, armBoltRegistry, armRedisProof, armRedisRegistry, armMemProof}
	return targetInput{
		Runs: runs,
		Plan: planOpen(runs, names),
		Handoffs: []handoffResult{
			{Name: handoffName("bolt", "proof"), Handoffs: 500, ToWrite: latencySummary{P99: 5}, ToGrant: latencySummary{P99: 2.01}},
			{Name: handoffName("redis", "proof"), FirstError: "bench: handoff: no acquire waiting at the registry after 5 s", ToWrite: summarize(nil), ToGrant: summarize(nil)},
			{Name: handoffName("redis", "registry"), Handoffs: 12, FirstError: "first write answered 409", ToWrite: latencySummary{P99: 1}, ToGrant: latencySummary{P99: 1}},
		},
		Throughput: []throughputResult{{Backend: "bolt", Concurrency: 1, Pairs: 900, PerSecond: 300}, {Backend: "bolt", Concurrency: 16, Pairs: 9000, Seconds: 3, PerSecond: 3000},
			{Backend: "memory", Concurrency: 16, Pairs: 9000, Seconds: 3, PerSecond: 3000, Errors: 2, FirstError: "503"}},
	}
}

// verdicts indexes results by "id arm".
func verdicts(rs []targetResult) map[string]targetResult {
	m := map[string]targetResult{}
	for _, r := range rs {
		m[r.ID+" "+r.Arm] = r
	}
	return m
}

func TestEvaluateTargets(t *testing.T) {
	got := verdicts(evaluateTargets(issue22Targets(), targetFixture()))
	for _, c := range []struct {
		key, verdict string
		median       float64 // NaN: not checked
		why          string
	}{
		// Boundaries meet the threshold.
		{"bolt-x64 " + armBoltProof, verdictPass, 0.6, ""},
		{"bolt-x16 " + armBoltProof, verdictPass, 0.4, ""},
		{"memory-x64 " + armMemProof, verdictPass, 0.9, ""},
		{"bolt-p99-1k " + armBoltProof, verdictPass, 3, ""},
		{"proxy-cpu-bolt " + armBoltProof, verdictPass, 0.1, ""},
		{"handoff-write-bolt " + handoffName("bolt", "proof"), verdictPass, 5, "p99 of 500 handoffs"},
		{"registry-pairs-bolt bolt", verdictPass, 3000, ""},
		// Just past them.
		{"bolt-x64 " + armBoltRegistry, verdictMiss, 0.59, ""},
		{"bolt-p99-1k " + armBoltRegistry, verdictMiss, math.NaN(), ""},
		{"proxy-cpu-bolt " + armBoltRegistry, verdictMiss, 0.25, ""},
		{"handoff-grant-bolt " + handoffName("bolt", "proof"), verdictMiss, 2.01, ""},
		{"redis-x64 " + armRedisProof, verdictMiss, 0.45, ""},
		{"redis-server-cpu " + armRedisRegistry, verdictMiss, 0.02, "rate not kept (3/3 open-1k runs)"},
		// Closed-64 maximum below 1,000/s: open-1k did not run, a MISS.
		{"redis-p99-1k " + armRedisProof, verdictMiss, math.NaN(), "closed-64 maximum 450 rps is below 1000/s"},
		{"redis-server-cpu " + armRedisProof, verdictMiss, math.NaN(), "rate not kept"},
		{"proxy-cpu-redis " + armRedisProof, verdictMiss, math.NaN(), "rate not kept"},
		// Ran but fell behind: MISS with the reason, even with a figure.
		{"redis-p99-1k " + armRedisRegistry, verdictMiss, math.NaN(), "rate not kept (3/3 open-1k runs)"},
		// A rejected request: MISS whatever the latency.
		{"memory-p99-1k " + armMemProof, verdictMiss, math.NaN(), "1/3 open-1k runs with non-2xx answers or errors"},
		// Arms and measurements that did not run.
		{"memory-x64 " + armMemRegistry, verdictNone, math.NaN(), "no closed-64 run"},
		{"memory-p99-1k " + armMemRegistry, verdictNone, math.NaN(), "no open-1k run"},
		{"soak-rss-bolt " + armBoltProof, verdictNone, math.NaN(), "run -soak"},
		{"soak-stall-redis " + armRedisProof, verdictNone, math.NaN(), "run -soak"},
		{"handoff-write-bolt " + handoffName("bolt", "registry"), verdictNone, math.NaN(), "not run"},
		// Handoffs that failed.
		{"handoff-write-redis " + handoffName("redis", "proof"), verdictMiss, math.NaN(), "failed: bench: handoff: no acquire waiting"},
		{"handoff-grant-redis " + handoffName("redis", "registry"), verdictMiss, 1, "failed after 12 handoffs"},
	} {
		r, ok := got[c.key]
		if !ok {
			t.Errorf("%s: no result", c.key)
			continue
		}
		if r.Verdict != c.verdict || !strings.Contains(r.Why, c.why) {
			t.Errorf("%s: %s (%s), want %s (%s)", c.key, r.Verdict, r.Why, c.verdict, c.why)
		}
		if !math.IsNaN(c.median) && math.Abs(r.Measured.Median-c.median) > 1e-9 {
			t.Errorf("%s: measured %v, want %v", c.key, r.Measured.Median, c.median)
		}
	}
	// An arm far faster than its baseline: the baseline's noise, not a PASS.
	noisy := targetFixture()
	for i, r := range noisy.Runs {
		if r.Arm == "direct" && r.Load == openFixedLoad {
			noisy.Runs[i].Latency.P99 = 40
		}
	}
	nv := verdicts(evaluateTargets(issue22Targets(), noisy))
	if r := nv["bolt-p99-1k "+armBoltProof]; r.Verdict != verdictNone || !strings.Contains(r.Why, "below -3.00 ms: the baseline's own noise") || r.Measured.Median > -30 {
		t.Errorf("direct p99 40 ms: %s %v (%s)", r.Verdict, r.Measured.Median, r.Why)
	}
	// Just below zero, within the bound: still a PASS.
	for i, r := range noisy.Runs {
		if r.Arm == "direct" && r.Load == openFixedLoad {
			noisy.Runs[i].Latency.P99 = 8
		}
	}
	if r := verdicts(evaluateTargets(issue22Targets(), noisy))["bolt-p99-1k "+armBoltProof]; r.Verdict != verdictPass || r.Measured.Median != -2 {
		t.Errorf("direct p99 8 ms: %s %v (%s)", r.Verdict, r.Measured.Median, r.Why)
	}
	// Errors in a throughput run: MISS, however fast.
	if r := measurePairs("memory", 16, targetFixture().Throughput); !r.miss || r.value.Median != 3000 || !strings.Contains(r.why, "2 errors: 503") {
		t.Errorf("throughput with errors: %+v", r)
	}
	if r := measurePairs("redis", 16, targetFixture().Throughput); !r.none {
		t.Errorf("throughput not run: %+v", r)
	}
	// The range over repetitions is kept: bolt-x64 on the proof arm 0.5–0.7.
	if r := got["bolt-x64 "+armBoltProof]; r.Measured.Min != 0.5 || r.Measured.Max != 0.7 || r.Measured.N != 3 || !r.Judged {
		t.Errorf("bolt-x64 measured %+v judged %v", r.Measured, r.Judged)
	}
	if r := got["bolt-x64 "+armBoltRegistry]; r.Judged {
		t.Error("the registry-mode twin is judged; want shown")
	}
}

func TestEvaluateTargetsWithoutDataNeverPass(t *testing.T) {
	for name, in := range map[string]targetInput{
		"nothing": {},
		// The arms ran but no baseline did: nothing to compare with.
		"no baselines": func() targetInput {
			in := targetFixture()
			in.Runs = slices.DeleteFunc(slices.Clone(in.Runs), func(r runRecord) bool { return r.Arm == "direct" || r.Arm == "plain-proxy" })
			return in
		}(),
	} {
		for _, r := range evaluateTargets(issue22Targets(), in) {
			if r.Verdict == verdictPass && (name == "nothing" || needsBaseline(r.ID)) {
				t.Errorf("%s: %s on %s: PASS without data (%+v)", name, r.ID, r.Arm, r)
			}
			if name == "nothing" && r.Verdict != verdictNone {
				t.Errorf("nothing: %s on %s: %s (%s), want not measured", r.ID, r.Arm, r.Verdict, r.Why)
			}
		}
	}
	got := verdicts(evaluateTargets(issue22Targets(), func() targetInput {
		in := targetFixture()
		in.Runs = slices.DeleteFunc(slices.Clone(in.Runs), func(r runRecord) bool { return r.Arm == "plain-proxy" })
		return in
	}()))
	if r := got["bolt-x64 "+armBoltProof]; r.Verdict != verdictNone || !strings.Contains(r.Why, "no valid closed-64 run of plain-proxy") {
		t.Errorf("no plain proxy: %s (%s)", r.Verdict, r.Why)
	}
	// An invalid baseline run counts as none: the repetition is left out.
	in := targetFixture()
	for i := range in.Runs {
		if in.Runs[i].Arm == "plain-proxy" && in.Runs[i].Load == "closed-64" && in.Runs[i].Rep == 1 {
			in.Runs[i].Errors = 1
		}
	}
	// Without repetition 1 (0.6): 0.5 and 0.7, median 0.6 again, from 2.
	if r := verdicts(evaluateTargets(issue22Targets(), in))["bolt-x64 "+armBoltProof]; r.Measured.N != 2 || r.Verdict != verdictPass {
		t.Errorf("invalid baseline in rep 1: %+v %s", r.Measured, r.Verdict)
	}
}

// needsBaseline: target id compares with the direct or plain-proxy arm.
func needsBaseline(id string) bool {
	for _, sp := range issue22Targets() {
		if sp.ID == id {
			return sp.Kind == kindRatio || sp.Kind == kindAddedP99 || sp.Kind == kindProxyCPUOverPlain
		}
	}
	return false
}

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		op        string
		v, th     float64
		want      string
		situation string
	}{
		{atLeast, 0.6, 0.6, verdictPass, "at the bound"},
		{atLeast, 0.5999, 0.6, verdictMiss, "below"},
		{atMost, 3, 3, verdictPass, "at the bound"},
		{atMost, 3.0001, 3, verdictMiss, "above"},
		{atMost, math.NaN(), 3, verdictMiss, "NaN"},
		{atLeast, math.NaN(), 3, verdictMiss, "NaN"},
		{"?", 1, 1, verdictMiss, "unknown op"},
	} {
		if got := judge(c.op, c.v, c.th); got != c.want {
			t.Errorf("judge(%s, %v, %v) %s = %s, want %s", c.op, c.v, c.th, c.situation, got, c.want)
		}
	}
}

func TestIssue22TargetsCoverTheIssue(t *testing.T) {
	specs := issue22Targets()
	known := map[string]bool{"bolt": true}
	for _, f := range fencegateArms() {
		known[f.name()] = true
	}
	for _, h := range handoffConfigs() {
		known[handoffName(h.backend, h.status)] = true
	}
	ids := map[string]bool{}
	for _, sp := range specs {
		if ids[sp.ID] {
			t.Errorf("target %s twice", sp.ID)
		}
		ids[sp.ID] = true
		for _, a := range append([]string{sp.Judged}, sp.Shown...) {
			if !known[a] {
				t.Errorf("%s: arm %q is no arm the bench runs", sp.ID, a)
			}
		}
		if sp.Op != atLeast && sp.Op != atMost {
			t.Errorf("%s: op %q", sp.ID, sp.Op)
		}
	}
	for _, id := range []string{"bolt-x64", "bolt-x16", "bolt-p99-1k", "redis-x64", "redis-p99-1k", "redis-server-cpu", "memory-x64", "memory-p99-1k",
		"proxy-cpu-memory", "proxy-cpu-bolt", "proxy-cpu-redis", "soak-rss-bolt", "soak-rss-redis", "soak-stall-bolt", "soak-stall-redis",
		"handoff-write-bolt", "handoff-write-redis", "handoff-grant-bolt", "handoff-grant-redis", "registry-pairs-bolt"} {
		if !ids[id] {
			t.Errorf("no target %s", id)
		}
	}
	if len(specs) != 20 {
		t.Errorf("%d targets, want the issue's 20", len(specs))
	}
}

func TestRenderTargets(t *testing.T) {
	rep := sampleReport()
	rep.Targets = evaluateTargets(issue22Targets(), targetFixture())
	rep.Profiles = append(rep.Profiles, profiled{Arm: armBoltRegistry, Role: "proxy", File: armBoltRegistry + "-proxy.pprof"},
		profiled{Arm: armBoltRegistry, Role: "registry", File: armBoltRegistry + "-registry.pprof"})
	md := renderMarkdown(rep)
	targets, machine := strings.Index(md, "## Targets"), strings.Index(md, "## Machine")
	if targets < 0 || machine < targets {
		t.Fatalf("RESULTS.md: want the Targets section before the Machine one:\n%s", md)
	}
	section := md[targets:machine]
	for _, want := range []string{
		"Machine load: 2 CPUs, load average 3.00 2.00 1.00 at the start",
		"**busy**",
		"Judged: 7 PASS, 9 MISS, 4 not measured (of 20).",
		"| bolt store >= 0.6x plain at 64 workers | fg-bolt-proof-EdDSA | closed-64 | 0.600 (0.500–0.700) × plain | >= 0.600 × plain | **PASS** |",
		// sampleReport's fg-redis-proof-EdDSA profile was not taken: no link.
		"| Redis store: added p99 <= 3 ms at 1,000 req/s | fg-redis-proof-EdDSA | open-1k | – | <= 3.00 ms | **MISS**: rate not kept: closed-64 maximum 450 rps is below 1000/s, so open-1k did not run |",
		// A MISS on a profiled arm links its profile; a PASS does not.
		"| bolt store: added p99 <= 3 ms at 1,000 req/s | fg-bolt-proof-EdDSA | open-1k | 3.00 (3.00–3.50) ms | <= 3.00 ms | **PASS** |",
		"|  | *fg-bolt-registry-EdDSA* (shown) | closed-64 | 0.590 × plain | >= 0.600 × plain | *MISS* ([profile](profiles/fg-bolt-registry-EdDSA-proxy.pprof)) |",
		"| RSS <= 40 MB anonymous at 1,000 req/s for 10 minutes, flat (bolt) | fg-bolt-proof-EdDSA | – | – | – | not measured: run -soak: judged in SOAK.md |",
		"| proxy CPU <= 0.1 core-s per 1,000 requests above the plain proxy's own (bolt store, at 1,000 req/s) | fg-bolt-proof-EdDSA | open-1k | 0.100 core-s/1k | <= 0.100 core-s/1k | **PASS** |",
		"| memory store >= 0.9x plain at 64 workers | fg-memory-proof-EdDSA | closed-64 | 0.900 (0.880–0.950) × plain | >= 0.900 × plain | **PASS** |",
		"| hand-off release -> the waiter's first accepted write p99 <= 5 ms (bolt registry) | handoff-bolt-proof | – | 5.00 ms | <= 5.00 ms | **PASS**: p99 of 500 handoffs |",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("Targets section lacks %q:\n%s", want, section)
		}
	}
}

func TestTableCell(t *testing.T) {
	if got := tableCell("MISS: failed: 503 | busy\nretry\r\n"); got != "MISS: failed: 503 / busy retry  " {
		t.Errorf("tableCell = %q", got)
	}
}

func TestPrintTargets(t *testing.T) {
	rs := []targetResult{
		{ID: "bolt-64", Arm: "fg-bolt-proof-EdDSA", Judged: true, Measured: spread{N: 3, Median: 0.6}, Op: ">=", Threshold: 0.6, Unit: "× plain", Verdict: verdictPass},
		{ID: "bolt-64", Arm: "fg-bolt-registry-EdDSA", Measured: spread{N: 3, Median: 0.5}, Op: ">=", Threshold: 0.6, Unit: "× plain", Verdict: verdictMiss},
		{ID: "soak-bolt", Arm: "fg-bolt-proof-EdDSA", Judged: true, Unit: "–", Verdict: verdictNone, Why: "run -soak: judged in SOAK.md"},
	}
	var b strings.Builder
	printTargets(&b, rs)
	want := fmt.Sprintf("target %-20s %-24s %-12s %s\n", "bolt-64", "fg-bolt-proof-EdDSA", verdictPass, "0.600 × plain (>= 0.600) ") +
		fmt.Sprintf("target %-20s %-24s %-12s %s\n", "soak-bolt", "fg-bolt-proof-EdDSA", verdictNone, "run -soak: judged in SOAK.md")
	if got := b.String(); got != want {
		t.Errorf("printTargets: the judged rows only, with their figure unless the unit is –:\ngot  %q\nwant %q", got, want)
	}
}
