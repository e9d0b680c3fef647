package main

import (
	"fmt"
	"math"
	"strings"
)

// Issue 22's targets, judged from the run's own records by pure functions
// (no I/O: the caller measures, these only read what was measured). Each
// target names one judged arm, whose verdict is the target's, and
// optionally arms shown beside it for comparison (the registry-mode twin
// of a proof-mode arm). A verdict is PASS only when the measurement ran,
// every run it rests on is valid and its median over the repetitions
// meets the threshold (a boundary value meets it); MISS when it ran and
// missed, or when the arm failed the run the target needs (non-2xx
// answers, the rate not kept); "not measured", with why, when the
// measurement did not run. Never PASS without data.

// Verdicts.
const (
	verdictPass = "PASS"
	verdictMiss = "MISS"
	verdictNone = "not measured"
)

// Target kinds: what a target measures.
const (
	// kindRatio is the arm's rps over the plain proxy's, per repetition.
	kindRatio = "rpsRatioToPlainProxy"
	// kindAddedP99 is the arm's p99 minus the direct arm's, per repetition.
	kindAddedP99 = "addedP99Ms"
	// kindProxyCPUOverPlain is the proxy's core-s per 1,000 requests minus
	// the plain proxy's, per repetition.
	kindProxyCPUOverPlain = "proxyCoreSecondsPer1kOverPlain"
	// kindRedisCPU is redis-server's core-s per 1,000 requests.
	kindRedisCPU = "redisCoreSecondsPer1k"
	// kindHandoffWrite and kindHandoffGrant are a handoff's p99 from the
	// release to the first accepted write and to the grant.
	kindHandoffWrite = "handoffReleaseToWriteP99Ms"
	kindHandoffGrant = "handoffReleaseToGrantP99Ms"
	// kindRegistryPairs is a registry's acquire+release pairs per second.
	kindRegistryPairs = "registryPairsPerSecond"
	// kindSoak is measured by the soak only (-soak, SOAK.md).
	kindSoak = "soak"
	// kindLibraryAddedP50 and kindLibraryAddedP99 are library mode's
	// fenced transactions' percentile minus the plain ones', per
	// repetition (library.go).
	kindLibraryAddedP50 = "libraryAddedP50Ms"
	kindLibraryAddedP99 = "libraryAddedP99Ms"
)

// Comparisons.
const (
	atLeast = ">="
	atMost  = "<="
)

// targetSpec is one target: what it measures, under which load, on which
// arms, against which threshold.
type targetSpec struct {
	ID   string `json:"id"`
	Text string `json:"target"`
	Kind string `json:"kind"`
	// Load is the load the runs are taken from (closed-16, closed-64,
	// open-1k); empty for handoffs, registry throughput and the soak.
	Load string `json:"load,omitempty"`
	// Judged is the arm whose verdict is the target's; Shown are measured
	// beside it. Handoff targets name handoff configurations (handoff.go),
	// registry throughput the registry backend.
	Judged    string   `json:"judgedArm"`
	Shown     []string `json:"shownArms,omitempty"`
	Op        string   `json:"op"`
	Threshold float64  `json:"threshold"`
	Unit      string   `json:"unit"`
	// Concurrency is the registry throughput's client count.
	Concurrency int `json:"concurrency,omitempty"`
}

// Arms the targets are judged on: proof mode where the issue does not say
// (the SDK's default for a worker that writes often: no registry round
// trip per write), with the registry-mode twin shown.
const (
	armBoltProof     = "fg-bolt-proof-EdDSA"
	armBoltRegistry  = "fg-bolt-registry-EdDSA"
	armRedisProof    = "fg-redis-proof-EdDSA"
	armRedisRegistry = "fg-redis-registry-EdDSA"
	armMemProof      = "fg-memory-proof-EdDSA"
	armMemRegistry   = "fg-memory-registry-EdDSA"
	armPgProof       = "fg-postgres-proof-EdDSA"
	armPgRegistry    = "fg-postgres-registry-EdDSA"
)

// issue22Targets are the issue's targets in its order.
func issue22Targets() []targetSpec {
	ratio := func(id, text, load, judged, shown string, th float64) targetSpec {
		return targetSpec{ID: id, Text: text, Kind: kindRatio, Load: load, Judged: judged, Shown: []string{shown}, Op: atLeast, Threshold: th, Unit: "× plain"}
	}
	p99 := func(id, text, judged, shown string, th float64) targetSpec {
		return targetSpec{ID: id, Text: text, Kind: kindAddedP99, Load: openFixedLoad, Judged: judged, Shown: []string{shown}, Op: atMost, Threshold: th, Unit: "ms"}
	}
	cpu := func(store, judged, shown string) targetSpec {
		return targetSpec{ID: "proxy-cpu-" + store, Text: "proxy CPU <= 0.1 core-s per 1,000 requests above the plain proxy's own (" + store + " store, at 1,000 req/s)",
			Kind: kindProxyCPUOverPlain, Load: openFixedLoad, Judged: judged, Shown: []string{shown}, Op: atMost, Threshold: 0.1, Unit: "core-s/1k"}
	}
	soak := func(id, text, arm string) targetSpec {
		return targetSpec{ID: id, Text: text, Kind: kindSoak, Judged: arm, Op: atMost, Unit: "–"}
	}
	handoff := func(kind, reg string, th float64) targetSpec {
		what, id := "release -> the waiter's first accepted write p99 <= 5 ms", "handoff-write-"
		if kind == kindHandoffGrant {
			what, id = "release -> grant p99 <= 2 ms", "handoff-grant-"
		}
		return targetSpec{ID: id + reg, Text: "hand-off " + what + " (" + reg + " registry)", Kind: kind,
			Judged: handoffName(reg, "proof"), Shown: []string{handoffName(reg, "registry")}, Op: atMost, Threshold: th, Unit: "ms"}
	}
	return []targetSpec{
		ratio("bolt-x64", "bolt store >= 0.6x plain at 64 workers", "closed-64", armBoltProof, armBoltRegistry, 0.6),
		ratio("bolt-x16", "bolt store >= 0.4x plain at 16 workers", "closed-16", armBoltProof, armBoltRegistry, 0.4),
		p99("bolt-p99-1k", "bolt store: added p99 <= 3 ms at 1,000 req/s", armBoltProof, armBoltRegistry, 3),
		ratio("redis-x64", "Redis store >= 0.5x plain at 64 workers", "closed-64", armRedisProof, armRedisRegistry, 0.5),
		p99("redis-p99-1k", "Redis store: added p99 <= 3 ms at 1,000 req/s", armRedisProof, armRedisRegistry, 3),
		{ID: "redis-server-cpu", Text: "Redis store: redis-server <= 0.05 core-s per 1,000 requests (at 1,000 req/s)", Kind: kindRedisCPU, Load: openFixedLoad,
			Judged: armRedisProof, Shown: []string{armRedisRegistry}, Op: atMost, Threshold: 0.05, Unit: "core-s/1k"},
		ratio("memory-x64", "memory store >= 0.9x plain at 64 workers", "closed-64", armMemProof, armMemRegistry, 0.9),
		p99("memory-p99-1k", "memory store: added p99 <= 300 µs at 1,000 req/s", armMemProof, armMemRegistry, 0.3),
		cpu("memory", armMemProof, armMemRegistry),
		cpu("bolt", armBoltProof, armBoltRegistry),
		cpu("redis", armRedisProof, armRedisRegistry),
		soak("soak-rss-bolt", "RSS <= 40 MB anonymous at 1,000 req/s for 10 minutes, flat (bolt)", armBoltProof),
		soak("soak-rss-redis", "RSS <= 40 MB anonymous at 1,000 req/s for 10 minutes, flat (Redis)", armRedisProof),
		soak("soak-stall-bolt", "no stall: every 10 s window's p99 within 2x the median window's (bolt)", armBoltProof),
		soak("soak-stall-redis", "no stall: every 10 s window's p99 within 2x the median window's (Redis)", armRedisProof),
		handoff(kindHandoffWrite, "bolt", 5),
		handoff(kindHandoffWrite, "redis", 5),
		handoff(kindHandoffGrant, "bolt", 2),
		handoff(kindHandoffGrant, "redis", 2),
		{ID: "registry-pairs-bolt", Text: "bolt registry >= 3,000 acquire+release pairs/s at 16 clients", Kind: kindRegistryPairs,
			Judged: "bolt", Op: atLeast, Threshold: 3000, Unit: "pairs/s", Concurrency: 16},
	}
}

// targetInput is what a run measured that the targets read.
type targetInput struct {
	Runs       []runRecord
	Plan       []openPlan
	Handoffs   []handoffResult
	Throughput []throughputResult
	// Library is the library phase's figures, nil when it did not run.
	Library *libraryResult
	// Skipped maps an arm selected but not run to why.
	Skipped map[string]string
}

// targetResult is one target on one arm.
type targetResult struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	Arm    string `json:"arm"`
	Load   string `json:"load,omitempty"`
	// Judged: this arm's verdict is the target's; else it is shown.
	Judged    bool    `json:"judged"`
	Measured  spread  `json:"measured"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit"`
	Verdict   string  `json:"verdict"`
	// Why says what a MISS or a "not measured" rests on, or what the
	// figure is (e.g. "p99 of 500 handoffs").
	Why string `json:"why,omitempty"`
}

// evaluateTargets judges every spec on its judged and shown arms.
func evaluateTargets(specs []targetSpec, in targetInput) []targetResult {
	var out []targetResult
	for _, sp := range specs {
		for i, a := range append([]string{sp.Judged}, sp.Shown...) {
			out = append(out, evaluateTarget(sp, a, i == 0, in))
		}
	}
	return out
}

// evaluateTarget judges spec on arm.
func evaluateTarget(sp targetSpec, armName string, judged bool, in targetInput) targetResult {
	r := targetResult{ID: sp.ID, Target: sp.Text, Arm: armName, Load: sp.Load, Judged: judged, Op: sp.Op, Threshold: sp.Threshold, Unit: sp.Unit}
	m := measureTarget(sp, armName, in)
	r.Measured, r.Why = m.value, m.why
	if difference(sp.Kind) && !m.none && !m.miss && m.value.Median < -sp.Threshold {
		// The arm beat its baseline by more than the bound: the
		// baseline's noise is larger than what is judged, so the figure
		// cannot show the bound met.
		m.none = true
		r.Why = fmt.Sprintf("below -%s %s: the baseline's own noise exceeds the bound", fmtNum(sp.Threshold, unitPrec(sp.Unit)), sp.Unit)
	}
	switch {
	case m.none:
		r.Verdict = verdictNone
	case m.miss:
		r.Verdict = verdictMiss
	default:
		r.Verdict = judge(sp.Op, m.value.Median, sp.Threshold)
	}
	return r
}

// difference tells the kinds that subtract a baseline arm's figure.
func difference(kind string) bool {
	switch kind {
	case kindAddedP99, kindProxyCPUOverPlain, kindLibraryAddedP50, kindLibraryAddedP99:
		return true
	}
	return false
}

// judge compares v with threshold: PASS or MISS; a NaN never passes (it
// compares false).
func judge(op string, v, threshold float64) string {
	ok := false
	switch op {
	case atLeast:
		ok = v >= threshold
	case atMost:
		ok = v <= threshold
	}
	if ok {
		return verdictPass
	}
	return verdictMiss
}

// measurement is a target's figure on one arm, or why there is none
// (none) or why it fails whatever its value (miss).
type measurement struct {
	value      spread
	none, miss bool
	why        string
}

func notMeasured(format string, args ...any) measurement {
	return measurement{value: spreadOf(nil), none: true, why: fmt.Sprintf(format, args...)}
}

func missed(v spread, format string, args ...any) measurement {
	return measurement{value: v, miss: true, why: fmt.Sprintf(format, args...)}
}

// measureTarget dispatches on the spec's kind; an arm the run skipped is
// not measured, with why.
func measureTarget(sp targetSpec, armName string, in targetInput) measurement {
	if why, ok := in.Skipped[armName]; ok {
		return notMeasured("arm skipped: %s", why)
	}
	switch sp.Kind {
	case kindRatio:
		return measureRuns(sp.Load, armName, "plain-proxy", in, func(r, base runRecord) float64 {
			if base.RPS <= 0 {
				return math.NaN()
			}
			return r.RPS / base.RPS
		})
	case kindAddedP99:
		return measureRuns(sp.Load, armName, "direct", in, func(r, base runRecord) float64 { return r.Latency.P99 - base.Latency.P99 })
	case kindProxyCPUOverPlain:
		return measureRuns(sp.Load, armName, "plain-proxy", in, func(r, base runRecord) float64 { return cpuOf(r, "proxy") - cpuOf(base, "proxy") })
	case kindRedisCPU:
		return measureRuns(sp.Load, armName, "", in, func(r, _ runRecord) float64 { return cpuOf(r, "redis") })
	case kindHandoffWrite, kindHandoffGrant:
		return measureHandoff(sp.Kind, armName, in.Handoffs)
	case kindRegistryPairs:
		return measurePairs(armName, sp.Concurrency, in.Throughput)
	case kindSoak:
		return notMeasured("run -soak: judged in SOAK.md")
	case kindLibraryAddedP50:
		return measureLibrary(in.Library, "p50", func(l latencySummary) float64 { return l.P50 })
	case kindLibraryAddedP99:
		return measureLibrary(in.Library, "p99", func(l latencySummary) float64 { return l.P99 })
	}
	return notMeasured("unknown target kind %q", sp.Kind)
}

// cpuOf is a run's core-s per 1,000 requests of role, NaN when not read.
func cpuOf(r runRecord, role string) float64 {
	if v, ok := r.CPU[role]; ok {
		return v
	}
	return math.NaN()
}

// measureRuns computes f over armName's runs under load, each against the
// baseline arm's valid run of the same repetition (no baseline: f gets a
// zero record). Repetitions without a valid baseline run, or where f is
// NaN, are left out.
func measureRuns(load, armName, baseline string, in targetInput, f func(r, base runRecord) float64) measurement {
	runs := runsOf(in.Runs, load, armName)
	if len(runs) == 0 {
		return absentRuns(load, armName, in.Plan)
	}
	vs := compareRuns(runs, in.Runs, load, baseline, f)
	return judgeRuns(runs, spreadOf(vs), load, baseline)
}

// runsOf is armName's runs under load, in order.
func runsOf(all []runRecord, load, armName string) []runRecord {
	var runs []runRecord
	for _, r := range all {
		if r.Load == load && r.Arm == armName {
			runs = append(runs, r)
		}
	}
	return runs
}

// compareRuns is f over runs, each against the baseline arm's valid run
// of the same repetition in all (no baseline: a zero record); a run whose
// repetition has no valid baseline run is left out.
func compareRuns(runs, all []runRecord, load, baseline string, f func(r, base runRecord) float64) []float64 {
	var vs []float64
	for _, r := range runs {
		var base runRecord
		if baseline != "" {
			b, ok := findRun(all, load, baseline, r.Rep)
			if !ok || !b.valid() {
				continue
			}
			base = b
		}
		vs = append(vs, f(r, base))
	}
	return vs
}

// judgeRuns is the measurement v of runs under load: a MISS when any run
// had non-2xx answers or errors or fell behind its schedule, not measured
// when v is empty.
func judgeRuns(runs []runRecord, v spread, load, baseline string) measurement {
	rejected, behind := 0, 0
	for _, r := range runs {
		if r.Non2xx+r.Errors > 0 {
			rejected++
		}
		if r.behind() {
			behind++
		}
	}
	switch {
	case rejected > 0:
		return missed(v, "%d/%d %s runs with non-2xx answers or errors", rejected, len(runs), load)
	case behind > 0:
		return missed(v, "rate not kept (%d/%d %s runs)", behind, len(runs), load)
	case v.N == 0 && baseline != "":
		return notMeasured("no valid %s run of %s in the same repetition to compare with", load, baseline)
	case v.N == 0:
		return notMeasured("not read in any %s run", load)
	}
	return measurement{value: v}
}

// absentRuns says why armName has no run under load: for open-1k, what
// its plan said.
func absentRuns(load, armName string, plan []openPlan) measurement {
	if load != openFixedLoad {
		return notMeasured("no %s run (arm not in this run: -arms?)", load)
	}
	for _, p := range plan {
		if p.Arm != armName {
			continue
		}
		switch {
		case p.MaxRPS == 0:
			return notMeasured("no valid %s run: no maximum to plan %s from", openMaxLoad, openFixedLoad)
		case p.MaxRPS < openFixedRate:
			return missed(spreadOf(nil), "rate not kept: %s maximum %.0f rps is below %.0f/s, so %s did not run", openMaxLoad, p.MaxRPS, openFixedRate, openFixedLoad)
		}
		return notMeasured("%s planned but not run (interrupted?)", openFixedLoad)
	}
	return notMeasured("no %s run (arm not in this run: -arms?)", load)
}

// findRun is arm's run under load in repetition rep.
func findRun(runs []runRecord, load, armName string, rep int) (runRecord, bool) {
	for _, r := range runs {
		if r.Load == load && r.Arm == armName && r.Rep == rep {
			return r, true
		}
	}
	return runRecord{}, false
}

// single is one figure as a spread (a measurement with no repetitions).
func single(v float64) spread { return spreadOf([]float64{v}) }

// measureHandoff is the p99 of the handoff configuration name.
func measureHandoff(kind, name string, hs []handoffResult) measurement {
	for _, h := range hs {
		if h.Name != name {
			continue
		}
		l := h.ToWrite
		if kind == kindHandoffGrant {
			l = h.ToGrant
		}
		switch {
		case h.Handoffs == 0 && h.FirstError != "":
			return missed(spreadOf(nil), "failed: %s", h.FirstError)
		case h.Handoffs == 0:
			return notMeasured("no handoff completed")
		case h.FirstError != "":
			return missed(single(l.P99), "failed after %d handoffs: %s", h.Handoffs, h.FirstError)
		}
		return measurement{value: single(l.P99), why: fmt.Sprintf("p99 of %d handoffs", h.Handoffs)}
	}
	return notMeasured("handoff %s not run", name)
}

// measurePairs is backend's acquire+release pairs per second at conc
// clients.
func measurePairs(backend string, conc int, ts []throughputResult) measurement {
	for _, t := range ts {
		if t.Backend != backend || t.Concurrency != conc {
			continue
		}
		switch {
		case t.Errors > 0:
			return missed(single(t.PerSecond), "%d errors: %s", t.Errors, t.FirstError)
		case t.Pairs == 0:
			return notMeasured("no pair completed")
		}
		return measurement{value: single(t.PerSecond), why: fmt.Sprintf("%d pairs in %.1f s, one run", t.Pairs, t.Seconds)}
	}
	return notMeasured("registry throughput on %s at %d clients not run", backend, conc)
}

// targetCounts counts the judged results' verdicts.
func targetCounts(rs []targetResult) (pass, miss, none int) {
	for _, r := range rs {
		if !r.Judged {
			continue
		}
		switch r.Verdict {
		case verdictPass:
			pass++
		case verdictMiss:
			miss++
		default:
			none++
		}
	}
	return pass, miss, none
}

// proxyProfiles maps each arm whose proxy was profiled to its file.
func proxyProfiles(ps []profiled) map[string]string {
	m := map[string]string{}
	for _, pr := range ps {
		if pr.Role == "proxy" && pr.Err == "" {
			m[pr.Arm] = pr.File
		}
	}
	return m
}

// unitPrec is how many decimals a unit's figures are shown with.
func unitPrec(unit string) int {
	switch unit {
	case "pairs/s":
		return 0
	case "× plain", "core-s/1k":
		return 3
	}
	return 2
}

// renderTargets writes the Targets table of rs; a MISS on an arm that
// was profiled links its proxy's profile (profiles: arm -> file in
// profiles/), where what bounds it shows.
func renderTargets(p func(string, ...any), rs []targetResult, profiles map[string]string) {
	pass, miss, none := targetCounts(rs)
	p("Judged: %d PASS, %d MISS, %d not measured (of %d). ", pass, miss, none, pass+miss+none)
	p("A judged row's verdict is the target's; a shown row (in italics) is measured beside it for comparison. ")
	p("The figure is the median over the repetitions with its range; PASS needs valid runs and the median within the threshold.\n\n")
	p("| target | arm | load | measured | threshold | verdict |\n|---|---|---|---:|---:|---|\n")
	for _, r := range rs {
		text, arm, verdict := r.Target, r.Arm, r.Verdict
		if r.Judged && r.Verdict != verdictNone {
			verdict = "**" + verdict + "**"
		}
		if !r.Judged {
			text, arm, verdict = "", "*"+arm+"* (shown)", "*"+verdict+"*"
		}
		if r.Why != "" {
			verdict += ": " + r.Why
		}
		if f, ok := profiles[r.Arm]; ok && r.Verdict == verdictMiss {
			verdict += " ([profile](profiles/" + f + "))"
		}
		threshold := "–"
		if r.Unit != "–" {
			threshold = r.Op + " " + fmtNum(r.Threshold, unitPrec(r.Unit)) + " " + r.Unit
		}
		measured := fmtSpread(r.Measured, unitPrec(r.Unit))
		if measured != "–" && r.Unit != "–" {
			measured += " " + r.Unit
		}
		load := r.Load
		if load == "" {
			load = "–"
		}
		p("| %s | %s | %s | %s | %s | %s |\n", text, arm, load, measured, threshold, tableCell(verdict))
	}
	p("\n")
}

// tableCell is s fit for one markdown table cell: no pipe, no line break
// (an error message may hold either).
func tableCell(s string) string {
	return strings.NewReplacer("|", "/", "\r", " ", "\n", " ").Replace(s)
}
