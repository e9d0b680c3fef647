package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// writeOutputs writes results.json, latency.svg and RESULTS.md into dir.
func writeOutputs(dir string, rep *report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: results.json: %w", err)
	}
	files := map[string][]byte{
		"results.json": append(js, '\n'),
		"latency.svg":  []byte(renderSVG(svgRows(rep.Rows))),
		"RESULTS.md":   []byte(renderMarkdown(rep)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// printTargets writes a line per judged target of rs to progress: its
// verdict, the median measured against the threshold, and why.
func printTargets(progress io.Writer, rs []targetResult) {
	for _, t := range rs {
		if !t.Judged {
			continue
		}
		figure := ""
		if t.Unit != "–" {
			figure = fmt.Sprintf("%s %s (%s %s) ", fmtNum(t.Measured.Median, unitPrec(t.Unit)), t.Unit, t.Op, fmtNum(t.Threshold, unitPrec(t.Unit)))
		}
		fmt.Fprintf(progress, "target %-20s %-24s %-12s %s%s\n", t.ID, t.Arm, t.Verdict, figure, t.Why)
	}
}

// fmtNum formats v with prec decimals, "–" for NaN.
func fmtNum(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// fmtSpread is "median (min–max)", or the median alone for one repetition.
func fmtSpread(s spread, prec int) string {
	if s.N <= 1 || s.Min == s.Max {
		return fmtNum(s.Median, prec)
	}
	return fmtNum(s.Median, prec) + " (" + fmtNum(s.Min, prec) + "–" + fmtNum(s.Max, prec) + ")"
}

// renderMarkdown is RESULTS.md.
func renderMarkdown(rep *report) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := rep.Machine
	p("# fencegate benchmark results\n\n")
	p("Written by `go run ./e2e/bench` (see [doc.go](doc.go) for what each arm and column is). ")
	p("Options: %d repetition(s), %s measured after %s warm-up per run, %d handoffs, %s per registry throughput run%s.\n\n",
		rep.Options.Reps, rep.Options.Duration, rep.Options.Warmup, rep.Options.Handoffs, rep.Options.TputDuration,
		map[bool]string{true: " (-quick)", false: ""}[rep.Options.Quick])
	renderPartial(p, rep.Options)
	if !rep.Options.Quick {
		p("The default per-run times (2 s measured after 0.75 s warm-up) are shorter than before the open-own and open-1k phases were added, so that the default run, build included, stays near 10 minutes on 2 cores before the PostgreSQL arms and the library phase, which add about 3.\n\n")
	}
	p("## Targets\n\n")
	p("Issue 22's targets and issue 23's (the PostgreSQL store, library mode), judged from this run's own data (targets.go, targets23.go; which arm each is judged on and why: doc.go). %s\n\n", rep.loadLine())
	renderTargets(p, rep.Targets, proxyProfiles(rep.Profiles))
	rep.machineTable(p)
	if rep.busy() {
		p("**The machine was busy**: other work shared its %d CPUs (load average and CPU pressure above: the share of time some task waited for a CPU). Absolute figures are pessimistic and noisier; the arms alternate round-robin, so each repetition's noise hits them alike and the ratios and added latencies are the figures to compare.\n\n", m.CPUs)
	}
	var rejected []string
	for _, r := range rep.Rows {
		if r.Rejected > 0 && !slices.Contains(rejected, r.Arm) {
			rejected = append(rejected, r.Arm)
		}
	}
	if len(rejected) > 0 {
		p("**Invalid arms**: %s had runs with non-2xx answers or errors; their figures are not comparable. See [Notes](#notes).\n\n", strings.Join(rejected, ", "))
	}
	renderSkipped(p, rep.Skipped)
	p("## Arms\n\n")
	p("Every run sends 1 KiB PUTs; each worker owns one resource and sends segments 1, 2, 3, ... with its grant headers through the SDK's Transport (in proof mode it also refreshes the `Fence-Status` proof as the SDK does). ")
	p("Each cell is the median of the repetitions, with the range in parentheses. `+p50` etc. are the arm's latency percentiles minus the direct arm's in the same repetition. ")
	p("CPU columns are core-seconds per 1,000 requests of each process (utime+stime from /proc): the proxy, the registry (fencegate arms: status reads in registry mode, proofs in proof mode), redis-server (redis store), the PostgreSQL backends serving the run's database (postgres store: those connected at the window's start, background processes not counted), the backend and the load generator itself. ")
	p("The proxy's memory is in its own table below. A run with any non-2xx answer, error, or (open loop) a backlog at the end of more than 1%% of the window's schedule (the arm did not keep the rate: \"missed\") is invalid.\n\n")
	p("The open loop runs at half the plain proxy's best closed-loop rate, %s requests/s, 64 workers each on a fixed schedule; latency counts from each request's intended start, and counts every request answered during the window, so an arm that cannot keep the rate shows its growing backlog as latency (and its rps is what it managed).\n\n", fmtNum(rep.OpenRate, 0))
	var loadsSeen []string
	for _, r := range rep.Rows {
		if len(loadsSeen) == 0 || loadsSeen[len(loadsSeen)-1] != r.Load {
			found := false
			for _, l := range loadsSeen {
				found = found || l == r.Load
			}
			if !found {
				loadsSeen = append(loadsSeen, r.Load)
			}
		}
	}
	for _, load := range loadsSeen {
		if load == openOwnLoad || load == openFixedLoad {
			continue // their own tables below
		}
		p("### %s\n\n", load)
		p("| arm | rps | × plain | +p50 ms | +p99 ms | +p99.9 ms | proxy | registry | redis | postgres | backend | loadgen | non-2xx | valid |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		var direct *armRow
		for i, r := range rep.Rows {
			if r.Load != load {
				continue
			}
			if r.Arm == "direct" {
				direct = &rep.Rows[i]
			}
			cpu := func(role string) string {
				s, ok := r.CPU[role]
				if !ok {
					return "–"
				}
				return fmtNum(s.Median, 3)
			}
			valid := validCell(r)
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
				r.Arm, fmtSpread(r.RPS, 0), fmtSpread(r.Ratio, 2), fmtSpread(r.AddP50, 2), fmtSpread(r.AddP99, 2), fmtSpread(r.AddP999, 2),
				cpu("proxy"), cpu("registry"), cpu("redis"), cpu("postgres"), cpu("backend"), cpu("loadgen"),
				r.Non2xx+r.Errors, valid)
		}
		if direct != nil {
			p("\nDirect (absolute, what the + columns are added to): p50 %s ms, p99 %s ms, p99.9 %s ms.\n\n",
				fmtSpread(direct.P50, 2), fmtSpread(direct.P99, 2), fmtSpread(direct.P999, 2))
		}
	}
	renderOpenTables(p, rep)
	p("![added latency per arm](latency.svg)\n\n")
	if len(rep.Memory) > 0 {
		p("## Proxy memory\n\n")
		p("Peak RSS (VmHWM) of each proxy process over the whole benchmark, and its VmRSS from the first measured window's start to the last one's end, with the growth per 100,000 requests answered in between (warm-ups included).\n\n")
		p("| proxy | peak RSS MiB | first RSS MiB | last RSS MiB | requests | growth MiB/100k |\n|---|---:|---:|---:|---:|---:|\n")
		for _, m := range rep.Memory {
			p("| %s | %s | %s | %s | %d | %s |\n", m.Arm, fmtNum(m.PeakRSSMiB, 1), fmtNum(m.FirstMiB, 1), fmtNum(m.LastMiB, 1), m.Answered, fmtNum(m.GrowthMiB, 2))
		}
		p("\n")
	}
	renderHandoffs(p, rep.Handoffs)
	if len(rep.Throughput) > 0 {
		renderThroughput(p, rep.Throughput)
	}
	renderLibrary(p, rep.Library)
	renderPostgresTotals(p, rep.Postgres)
	renderProfileSummaries(p, rep.Profiles)
	if len(rep.Notes) > 0 {
		p("## Notes\n\n")
		for _, n := range rep.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
	p("The data of every run: [results.json](results.json).\n")
	return b.String()
}

// validCell is a row's "valid" column.
func validCell(r armRow) string {
	switch {
	case r.Rejected > 0:
		return fmt.Sprintf("**NO**: non-2xx or errors (%d/%d runs)", r.Rejected, r.Runs)
	case r.Behind > 0:
		return fmt.Sprintf("rate not kept (%d/%d runs, %d missed)", r.Behind, r.Runs, r.Missed)
	}
	return "yes"
}

// busy reports a 1-minute load average above half the CPUs.
func busy(loadavg string, cpus int) bool {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v > float64(cpus)/2
}

// runInfo is what every report says of its run (RESULTS.md and SOAK.md,
// results.json and soak.json): the machine, the options, the pinning and
// how busy the machine was.
type runInfo struct {
	Machine       machineInfo `json:"machine"`
	Options       options     `json:"options"`
	Pinning       pinning     `json:"pinning"`
	LoadAvgStart  string      `json:"loadAvgStart"`
	LoadAvgEnd    string      `json:"loadAvgEnd"`
	PressureStart string      `json:"cpuPressureStart"`
	PressureEnd   string      `json:"cpuPressureEnd"`
	Elapsed       float64     `json:"elapsedSeconds"`
}

// machineTable writes the "Machine" section.
func (ri runInfo) machineTable(p func(string, ...any)) {
	m := ri.Machine
	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s, %d CPUs |\n| memory | %s |\n| kernel | %s |\n| Go | %s |\n| date | %s |\n", m.CPUModel, m.CPUs, m.MemTotal, m.Kernel, m.GoVersion, m.Date)
	commit := m.Commit
	if m.Dirty {
		commit += " (with uncommitted changes)"
	}
	p("| commit | %s |\n| pinning | %s |\n| load average (1/5/15 min) at start | %s |\n| load average at end | %s |\n| CPU pressure (PSI some) at start | %s |\n| CPU pressure at end | %s |\n| elapsed | %.0f s |\n\n",
		commit, ri.Pinning.Note, ri.LoadAvgStart, ri.LoadAvgEnd, ri.PressureStart, ri.PressureEnd, ri.Elapsed)
}

// loadLine is the machine's load in one sentence, for beside a verdict.
func (ri runInfo) loadLine() string {
	l := fmt.Sprintf("Machine load: %d CPUs, load average %s at the start and %s at the end, CPU pressure %s at the start and %s at the end",
		ri.Machine.CPUs, orDash(ri.LoadAvgStart), orDash(ri.LoadAvgEnd), orDash(ri.PressureStart), orDash(ri.PressureEnd))
	if ri.busy() {
		return l + ": **busy** (other work shared the CPUs; absolute figures are pessimistic)."
	}
	return l + "."
}

// orDash is s, or "–" when empty.
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// busy reports whether the machine was busy at the start or the end.
func (ri runInfo) busy() bool {
	return busy(ri.LoadAvgStart, ri.Machine.CPUs) || busy(ri.LoadAvgEnd, ri.Machine.CPUs)
}

// renderPartial writes, for a run with -arms or -no-registry-phases,
// what it left out.
func renderPartial(p func(string, ...any), o options) {
	if o.Arms != "" || o.NoRegistryPhases || o.RegistryPhasesOnly || o.RegistryBackends != "" {
		p("**A partial run**: %s.\n\n", partialRun(o))
	}
}

// partialRun says what a run with -arms or -no-registry-phases left out.
func partialRun(o options) string {
	var parts []string
	if o.Arms != "" {
		parts = append(parts, fmt.Sprintf("only the arms and phases `-arms %s` matches, with the baselines (direct, plain-proxy)", o.Arms))
	}
	if o.NoRegistryPhases {
		parts = append(parts, "no handoffs nor registry throughput (-no-registry-phases)")
	}
	if o.RegistryPhasesOnly {
		parts = append(parts, "only the handoffs and the registry throughput (-registry-phases-only): no arm, so the arms' targets are not measured")
	}
	if o.RegistryBackends != "" {
		parts = append(parts, fmt.Sprintf("only the registry backends `-registry-backends %s` matches", o.RegistryBackends))
	}
	return strings.Join(parts, "; ")
}

// renderThroughput is RESULTS.md's registry throughput section.
func renderThroughput(p func(string, ...any), ts []throughputResult) {
	p("## Registry acquire+release throughput\n\n")
	p("Each worker acquires a lease on its own resource and releases it, in a loop, with the SDK's low-level client (`Acquire`, `Release`). The bolt, redis and etcd backends are durable (bbolt fsync; redis-server with appendonly yes, appendfsync always; a one-member etcd, whose every commit is fsynced to its WAL).\n\n")
	p("| backend | concurrency | acquire+release /s | registry core-s/1k | redis or etcd core-s/1k | errors |\n|---|---:|---:|---:|---:|---:|\n")
	for _, t := range ts {
		server := "–"
		switch t.Backend {
		case "redis":
			server = fmtNum(t.RedisCPU, 3)
		case "etcd":
			server = fmtNum(t.EtcdCPU, 3)
		}
		p("| %s | %d | %s | %s | %s | %d |\n", t.Backend, t.Concurrency, fmtNum(t.PerSecond, 0), fmtNum(t.RegistryCPU, 3), server, t.Errors)
	}
	p("\n")
}
