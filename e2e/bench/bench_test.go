package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the test binary serve the bench's server subcommands, so
// the smoke test can re-execute it as the backend and the plain proxy.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if err := subcommand(os.Args[1], os.Args[2:]); err != errNoSubcommand {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	// No goroutine may outlive the tests.
	goleak.VerifyTestMain(m)
}

func TestPercentileNearestRank(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0.0001, 1}} {
		if got := percentile(xs, c.q); got != c.want {
			t.Errorf("percentile(1..1000, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := percentile([]float64{7}, 0.999); got != 7 {
		t.Errorf("one sample: p99.9 = %v, want 7", got)
	}
	for _, q := range []float64{0, -1, 1.5, math.NaN()} {
		if got := percentile(xs, q); !math.IsNaN(got) {
			t.Errorf("percentile(q=%v) = %v, want NaN", q, got)
		}
	}
	if got := percentile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("no samples: %v, want NaN", got)
	}
}

func TestSummarizeMilliseconds(t *testing.T) {
	var ns []int64
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		ns = append(ns, int64(i)*int64(time.Millisecond))
	}
	s := summarize(ns)
	if s.P50 != 500 || s.P99 != 990 || s.P999 != 999 || s.Max != 1000 || s.Mean != 500.5 {
		t.Errorf("summarize = %+v", s)
	}
	if e := summarize(nil); !math.IsNaN(e.P50) {
		t.Errorf("summarize(nil).P50 = %v, want NaN", e.P50)
	}
}

func TestSpreadOf(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s.Median != 2 || s.Min != 1 || s.Max != 3 || s.N != 3 {
		t.Errorf("odd: %+v", s)
	}
	if s := spreadOf([]float64{4, 1, math.NaN(), 2, 3}); s.Median != 2.5 || s.N != 4 {
		t.Errorf("even with NaN: %+v", s)
	}
	if s := spreadOf([]float64{math.NaN()}); !math.IsNaN(s.Median) || s.N != 0 {
		t.Errorf("all NaN: %+v", s)
	}
	b, err := json.Marshal(spreadOf(nil))
	if err != nil || string(b) != `{"max":null,"median":null,"min":null,"n":0}` {
		t.Errorf("JSON of an empty spread: %s %v", b, err)
	}
}

// A /proc/PID/stat line whose command name holds spaces and parentheses:
// utime is 1234 and stime 567.
const statLine = "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 8 0 100 123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"

func TestCPUTicks(t *testing.T) {
	got, err := cpuTicks(statLine)
	if err != nil || got != 1234+567 {
		t.Fatalf("cpuTicks = %d, %v; want 1801", got, err)
	}
	for _, bad := range []string{"", "4242 no parens S 1", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 5 0"} {
		if _, err := cpuTicks(bad); !errors.Is(err, errProcStat) {
			t.Errorf("cpuTicks(%q) error = %v, want errProcStat", bad, err)
		}
	}
	// The real file of this process parses.
	if s, err := readCPUSeconds(os.Getpid()); err != nil || s < 0 {
		t.Errorf("readCPUSeconds(self) = %v, %v", s, err)
	}
}

func TestParseStatusMem(t *testing.T) {
	status := "Name:\tbench\nVmPeak:\t  900 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t8\n"
	m, err := parseStatusMem(status)
	if err != nil || m.RSS != 10240 || m.HWM != 20480 {
		t.Fatalf("parseStatusMem = %+v, %v", m, err)
	}
	for _, bad := range []string{"Name: x\n", "VmRSS: 10 kB\n", "VmRSS: 10 MB\nVmHWM: 1 kB\n", "VmRSS: -1 kB\nVmHWM: 1 kB\n"} {
		if _, err := parseStatusMem(bad); !errors.Is(err, errProcStat) {
			t.Errorf("parseStatusMem(%q) error = %v, want errProcStat", bad, err)
		}
	}
	if m, err := readMem(os.Getpid()); err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("readMem(self) = %+v, %v", m, err)
	}
}

func FuzzCPUTicks(f *testing.F) {
	f.Add(statLine)
	f.Add("1 ()) S")
	f.Fuzz(func(t *testing.T, s string) { _, _ = cpuTicks(s) })
}

func FuzzParseStatusMem(f *testing.F) {
	f.Add("VmHWM:\t1 kB\nVmRSS:\t1 kB\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseStatusMem(s) })
}

func TestParseCPUInfo(t *testing.T) {
	model, n := parseCPUInfo(strings.NewReader("processor\t: 0\nmodel name\t: Test CPU @ 3GHz\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 3GHz\n"))
	if model != "Test CPU @ 3GHz" || n != 2 {
		t.Errorf("parseCPUInfo = %q, %d", model, n)
	}
}

func TestParsePressure(t *testing.T) {
	got := parsePressure("some avg10=73.21 avg60=84.01 avg300=70.18 total=1220275337\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	if got != "avg10 73.21%, avg60 84.01%" {
		t.Errorf("parsePressure = %q", got)
	}
	if got := parsePressure("full avg10=1 avg60=2\n"); got != "unknown" {
		t.Errorf("no some line: %q", got)
	}
}

func TestPlanPinning(t *testing.T) {
	if p := planPinning(true, 2, "/usr/bin/taskset"); !p.Enabled || p.ServerCPUs != "0" || p.LoadCPU != 1 {
		t.Errorf("2 CPUs: %+v", p)
	}
	if p := planPinning(true, 8, "/usr/bin/taskset"); !p.Enabled || p.ServerCPUs != "0-6" || p.LoadCPU != 7 {
		t.Errorf("8 CPUs: %+v", p)
	}
	for _, p := range []pinning{planPinning(true, 1, "/usr/bin/taskset"), planPinning(true, 4, ""), planPinning(false, 4, "/usr/bin/taskset")} {
		if p.Enabled || p.Note == "" {
			t.Errorf("want unpinned with a reason: %+v", p)
		}
	}
}

// syntheticRuns are two repetitions of one load over direct, the plain
// proxy and one sidecar arm, the sidecar's second run with a rejection.
func syntheticRuns() []runRecord {
	mk := func(rep int, arm string, rps, p50, p99, p999 float64, non2xx int) runRecord {
		return runRecord{Rep: rep, Load: "closed-16", Arm: arm, Workers: 16, Requests: int(rps) * 3, Seconds: 3, RPS: rps,
			Latency: latencySummary{P50: p50, P99: p99, P999: p999}, Non2xx: non2xx,
			CPU: map[string]float64{"proxy": 0.1 * float64(rep), "loadgen": 0.02}, Answered: int(rps) * 4,
			ProxyRSSStart: 10240 * int64(rep), ProxyRSSEnd: 10240*int64(rep) + 1024, ProxyPeakRSS: 20480}
	}
	return []runRecord{
		mk(1, "direct", 10000, 1, 2, 3, 0), mk(1, "plain-proxy", 8000, 1.5, 3, 5, 0), mk(1, "fg-x", 2000, 3, 6, 9, 0),
		mk(2, "direct", 12000, 2, 3, 4, 0), mk(2, "plain-proxy", 6000, 2.5, 4, 6, 0), mk(2, "fg-x", 3000, 5, 9, 14, 2),
	}
}

func TestBuildRows(t *testing.T) {
	rows := buildRows(syntheticRuns())
	if len(rows) != 3 || rows[0].Arm != "direct" || rows[2].Arm != "fg-x" {
		t.Fatalf("rows = %+v", rows)
	}
	fg := rows[2]
	// Added over direct per repetition: p50 2 and 3, p99 4 and 6, p99.9 6 and 10.
	if fg.AddP50 != (spread{2.5, 2, 3, 2}) || fg.AddP99 != (spread{5, 4, 6, 2}) || fg.AddP999 != (spread{8, 6, 10, 2}) {
		t.Errorf("added: %+v %+v %+v", fg.AddP50, fg.AddP99, fg.AddP999)
	}
	// Ratio to the plain proxy per repetition: 0.25 and 0.5.
	if fg.Ratio != (spread{0.375, 0.25, 0.5, 2}) {
		t.Errorf("ratio: %+v", fg.Ratio)
	}
	if fg.Non2xx != 2 || fg.Invalid != 1 || fg.Rejected != 1 || fg.Runs != 2 {
		t.Errorf("validity: %+v", fg)
	}
	if fg.PeakRSSMiB != 20 || fg.CPU["proxy"].Median != 0.15000000000000002 && fg.CPU["proxy"].Median != 0.15 {
		t.Errorf("peak %v cpu %+v", fg.PeakRSSMiB, fg.CPU["proxy"])
	}
	if rows[0].AddP99.Median != 0 {
		t.Errorf("direct's added p99 = %v, want 0", rows[0].AddP99.Median)
	}
}

func TestBuildMemory(t *testing.T) {
	runs := append(syntheticRuns(), runRecord{Rep: 3, Load: "closed-16", Arm: "fg-x", Answered: 999}) // its proxy had exited: no reading
	mem := buildMemory(runs)
	if len(mem) != 3 || mem[2].Arm != "fg-x" {
		t.Fatalf("memory rows = %+v", mem)
	}
	fg := mem[2]
	// From 10 MiB before the first window to 21 MiB after the last, over
	// the first window's 6000 requests and the second run's 12000.
	want := (21.0 - 10.0) / 18000 * 1e5
	if fg.FirstMiB != 10 || fg.LastMiB != 21 || fg.Answered != 18000 || math.Abs(fg.GrowthMiB-want) > 1e-9 || fg.PeakRSSMiB != 20 {
		t.Errorf("fg-x memory = %+v, want growth %v", fg, want)
	}
	if got := buildMemory([]runRecord{{Arm: "direct", Requests: 10}}); len(got) != 0 {
		t.Errorf("an arm without proxy readings got a row: %+v", got)
	}
}

func TestOpenLoopBehind(t *testing.T) {
	r := runRecord{TargetRate: 1000, Seconds: 3, Requests: 2990, Missed: 30}
	if r.behind() || !r.valid() {
		t.Errorf("30 missed of 3000 scheduled is within 1%%: behind=%v", r.behind())
	}
	r.Missed = 31
	if !r.behind() || r.valid() {
		t.Errorf("31 missed of 3000 scheduled: want behind and invalid")
	}
}

func sampleReport() *report {
	runs := syntheticRuns()
	return &report{
		runInfo: runInfo{
			Machine:      machineInfo{CPUModel: "Test CPU", CPUs: 2, Kernel: "6.0", GoVersion: "go1.x", Date: "2026-01-01 00:00 UTC", Commit: "abc123"},
			Options:      options{Reps: 2, Duration: 3 * time.Second, Warmup: time.Second, Handoffs: 1000, TputDuration: 3 * time.Second},
			Pinning:      pinning{Note: "not pinned: test"},
			LoadAvgStart: "3.00 2.00 1.00", LoadAvgEnd: "0.10 0.10 0.10", PressureStart: "avg10 50.00%, avg60 40.00%"},
		OpenRate: 4000,
		Runs:     runs, Rows: buildRows(runs), Memory: buildMemory(runs),
		Handoffs: []handoffResult{{Name: handoffName("bolt", "proof"), Registry: "EdDSA (bolt)", Backend: "bolt", Store: "bolt", Status: "proof", Handoffs: 1000,
			ToGrant: latencySummary{P50: 1, P99: 2, P999: 3, Max: 4}, ToWrite: latencySummary{P50: 5, P99: 6, P999: 7, Max: 8}},
			{Name: handoffName("redis", "proof"), Backend: "redis", Store: "redis", Status: "proof", FirstError: "bench: handoff: no acquire waiting",
				ToGrant: summarize(nil), ToWrite: summarize(nil)}},
		Profiles: []profiled{{Arm: "fg-bolt-proof-EdDSA", Role: "proxy", File: "fg-bolt-proof-EdDSA-proxy.pprof", Requests: 4321,
			Top: []string{"0.21s 15.79% 15.79% 0.21s 15.79% syscall.Syscall6"}, Cum: []string{"0 0% 0% 0.73s 54.89% net/http.(*conn).serve"}},
			{Arm: "fg-redis-proof-EdDSA", Role: "proxy", Err: "503 Service Unavailable"}},
		Throughput: []throughputResult{{Backend: "redis", Concurrency: 16, PerSecond: 1234, RegistryCPU: 0.5, RedisCPU: 0.25}},
	}
}

func TestRenderMarkdown(t *testing.T) {
	md := renderMarkdown(sampleReport())
	for _, want := range []string{
		"| CPU | Test CPU, 2 CPUs |", "| commit | abc123 |", "3.00 2.00 1.00", "| CPU pressure (PSI some) at start | avg10 50.00%, avg60 40.00% |", "**The machine was busy**",
		"### closed-16", "| fg-x | 2500 (2000–3000) | 0.38 (0.25–0.50) | 2.50 (2.00–3.00) | 5.00 (4.00–6.00) | 8.00 (6.00–10.00) |",
		"**NO**: non-2xx or errors (1/2 runs)", "**Invalid arms**: fg-x had runs", "Direct (absolute", "half the plain proxy's best closed-loop rate, 4000",
		"| handoff-bolt-proof | EdDSA (bolt) | bolt | proof | 1000 | 1.00 / 2.00 / 3.00 / 4.00 | 5.00 / 6.00 / 7.00 / 8.00 | – |",
		"| handoff-redis-proof | – | redis | proof | 0 | – / – / – / – | – / – / – / – | bench: handoff: no acquire waiting |",
		"## CPU profiles", "[fg-bolt-proof-EdDSA-proxy.pprof](profiles/fg-bolt-proof-EdDSA-proxy.pprof) ([top](profiles/fg-bolt-proof-EdDSA-proxy.txt)), 4321 requests",
		"0.21s 15.79% 15.79% 0.21s 15.79% syscall.Syscall6", "0 0% 0% 0.73s 54.89% net/http.(*conn).serve", "### fg-redis-proof-EdDSA, proxy\n\nnot taken: 503 Service Unavailable", "| redis | 16 | 1234 | 0.500 | 0.250 | 0 |", "## Proxy memory", "| fg-x | 20.0 | 10.0 | 21.0 | 18000 | 61.11 |",
		"![added latency per arm](latency.svg)", "[results.json](results.json)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	quiet := sampleReport()
	quiet.LoadAvgStart = "0.20 0.1 0.1"
	quiet.LoadAvgEnd = "0.30 0.1 0.1"
	if strings.Contains(renderMarkdown(quiet), "machine was busy") {
		t.Error("a quiet machine reported busy")
	}
}

func TestRenderSVGWellFormed(t *testing.T) {
	rows := sampleReport().Rows
	rows[1].Arm = `plain<"proxy">&` // names are escaped, never markup
	svg := renderSVG(rows)
	rects, texts := 0, 0
	for _, se := range svgElements(t, svg) {
		switch se.Name.Local {
		case "rect":
			rects++
		case "text":
			texts++
		}
	}
	// Background + 3 legend swatches + 3 bars for each of 2 arms (direct
	// is the baseline, not drawn).
	if rects != 1+3+2*3 {
		t.Errorf("SVG has %d rects, want 10", rects)
	}
	for _, want := range []string{"fg-x (INVALID)", "plain&lt;&#34;proxy&#34;&gt;&amp;", "closed-16", "fg-x +p99.9 8.000 ms"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if empty := renderSVG(nil); !strings.Contains(empty, "no runs") {
		t.Error("empty plot lacks its note")
	}
}

func TestOutputsWritten(t *testing.T) {
	dir := t.TempDir()
	rep := sampleReport()
	rep.Rows[0].P50 = spreadOf(nil) // a NaN must not break the JSON
	if err := writeOutputs(dir, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if runs, _ := back["runs"].([]any); len(runs) != 6 {
		t.Errorf("results.json has %d runs, want 6", len(runs))
	}
	for _, name := range []string{"RESULTS.md", "latency.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSmokeQuick runs the whole command with tiny durations: the real
// fencegate binary, registries, sidecars, redis-server. Only with
// FENCEGATE_BENCH_SMOKE=1 and without -short.
func TestSmokeQuick(t *testing.T) {
	if testing.Short() || os.Getenv("FENCEGATE_BENCH_SMOKE") != "1" {
		t.Skip("set FENCEGATE_BENCH_SMOKE=1 (and no -short) to run the bench smoke test")
	}
	out := t.TempDir()
	o := options{Quick: true, Reps: 1, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Handoffs: 20, TputDuration: 200 * time.Millisecond, Out: out, Profile: time.Second, ProfileArms: "^fg-bolt-proof-EdDSA$", LibraryIterations: 50}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress strings.Builder
	if err := run(ctx, o, &progress); err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs []struct {
			Arm, Load      string
			Requests       int
			Non2xx, Errors int
			FirstError     string
		}
		Handoffs []struct {
			Name       string
			Handoffs   int
			FirstError string
		}
		Targets []struct {
			ID, Arm, Verdict string
			Judged           bool
		}
		Profiles   []struct{ Arm, Role, Error string }
		Throughput []struct {
			Backend   string
			PerSecond float64 `json:"pairsPerSecond"`
			Errors    int
		} `json:"registryThroughput"`
		Library struct {
			Fence       string
			NotMeasured string
			Reps        []struct {
				Plain, Fenced struct {
					P50 *float64 `json:"p50Ms"`
				}
				PlainErrors, FencedErrors int
				FirstError                string
			}
		} `json:"libraryMode"`
		Postgres struct {
			Commits int64  `json:"xactCommit"`
			Err     string `json:"error"`
		}
		Skipped []skippedArm `json:"skippedArms"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	perLoad := map[string]int{}
	for _, r := range rep.Runs {
		perLoad[r.Load]++
	}
	if perLoad["closed-16"] != 12 || perLoad["closed-64"] != 12 || perLoad[openOwnLoad] != 12 || perLoad[openFixedLoad] < 2 || len(perLoad) != 5 {
		t.Errorf("runs per load %v, want 12 arms under closed-16, closed-64, the plain-rate open loop and open-own, and at least direct and plain-proxy under open-1k", perLoad)
	}
	for _, r := range rep.Runs {
		if r.Non2xx+r.Errors > 0 {
			t.Errorf("%s %s: %d non-2xx, %d errors: %s", r.Load, r.Arm, r.Non2xx, r.Errors, r.FirstError)
		}
		if strings.HasPrefix(r.Load, "closed") && r.Requests == 0 {
			t.Errorf("%s %s: no request measured", r.Load, r.Arm)
		}
	}
	if len(rep.Handoffs) != len(handoffConfigs()) {
		t.Errorf("handoffs: %+v", rep.Handoffs)
	}
	for _, h := range rep.Handoffs {
		if h.Handoffs != 20 || h.FirstError != "" {
			t.Errorf("handoff %+v", h)
		}
	}
	if len(rep.Profiles) != 1 || rep.Profiles[0].Arm != "fg-bolt-proof-EdDSA" || rep.Profiles[0].Error != "" {
		t.Errorf("profiles: %+v", rep.Profiles)
	}
	judged := 0
	for _, tg := range rep.Targets {
		if tg.Judged {
			judged++
		}
		if strings.HasPrefix(tg.ID, "soak-") && tg.Verdict != verdictNone {
			t.Errorf("target %s: %s without a soak", tg.ID, tg.Verdict)
		}
	}
	if want := len(issue22Targets()) + len(issue23Targets()); judged != want {
		t.Errorf("%d judged targets, want %d", judged, want)
	}
	// The PostgreSQL parts: the arms ran (no skip), the library phase ran
	// both kinds of transaction, the database's counts were read.
	if len(rep.Skipped) != 0 {
		t.Errorf("skipped %+v with PostgreSQL running", rep.Skipped)
	}
	if l := rep.Library; l.Fence != "pgfence.Apply" || l.NotMeasured != "" || len(l.Reps) != 1 || l.Reps[0].Plain.P50 == nil || l.Reps[0].Fenced.P50 == nil ||
		l.Reps[0].PlainErrors+l.Reps[0].FencedErrors != 0 {
		t.Errorf("library phase: %+v, want pgfence.Apply measured without an error", l)
	}
	if rep.Postgres.Commits <= 0 || rep.Postgres.Err != "" {
		t.Errorf("PostgreSQL totals %+v", rep.Postgres)
	}
	if len(rep.Throughput) != 8 { // bolt, memory, redis, etcd at 1 and 16
		t.Errorf("throughput rows: %+v", rep.Throughput)
	}
	for _, tp := range rep.Throughput {
		if tp.PerSecond <= 0 || tp.Errors != 0 {
			t.Errorf("throughput %+v", tp)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Targets") || !strings.Contains(string(md), "## CPU profiles") {
		t.Error("RESULTS.md lacks the Targets or the CPU profiles section")
	}
	for _, arm := range []string{"direct", "plain-proxy", "fg-memory-registry-EdDSA", "fg-bolt-proof-EdDSA", "fg-redis-registry-EdDSA", "fg-bolt-registry-ES256", "fg-bolt-registry-HS256", "fg-postgres-proof-EdDSA", "fg-postgres-registry-EdDSA"} {
		if !strings.Contains(string(md), "| "+arm+" |") {
			t.Errorf("RESULTS.md lacks a row for %s", arm)
		}
	}
}

func TestCrashSummary(t *testing.T) {
	out := "log line\npanic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:\nmain.f()\n\t/x.go:9\n"
	got := crashSummary(out)
	if !strings.HasPrefix(got, "panic: runtime error: index out of range") || !strings.Contains(got, "main.f()") {
		t.Errorf("crashSummary = %q", got)
	}
	if got := crashSummary("a\nb\n"); got != "a | b" {
		t.Errorf("no panic: %q", got)
	}
}

// svgElements returns the start elements of svg, failing t when it is not
// well-formed XML.
func svgElements(t *testing.T, svg string) []xml.StartElement {
	t.Helper()
	var out []xml.StartElement
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			out = append(out, se.Copy())
		}
	}
}
