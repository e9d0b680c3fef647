package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// soakTarget is issue 12's steady-state target and how a soak is judged
// against it.
type soakTarget struct {
	// RSSMB is the bound on the proxy's resident set in MB of 10^6 bytes
	// (the stricter reading of "40 MB": 38.1 MiB). It is compared with
	// the process's peak (VmHWM at the end), not a sample.
	RSSMB float64 `json:"rssMB"`
	// CPUPer1k bounds the proxy's core-seconds per 1,000 requests over
	// the whole run.
	CPUPer1k float64 `json:"coreSecondsPer1k"`
	// FlatMiBPerMin is the largest RSS slope (least squares over the
	// samples of the run's second half) that counts as flat.
	FlatMiBPerMin float64 `json:"flatMiBPerMin"`
	// Rate and Seconds are the load and length the target is stated for.
	Rate    float64 `json:"rate"`
	Seconds float64 `json:"seconds"`
	// Issue 22 bounds the anonymous resident set (RssAnon) by RSSMB and
	// asks it flat (its slope at most FlatMiBPerMin), and asks no stall:
	// every full WindowSeconds window's p99 at most StallFactor times the
	// median window's.
	WindowSeconds float64 `json:"windowSeconds"`
	StallFactor   float64 `json:"stallFactor"`
}

var defaultSoakTarget = soakTarget{RSSMB: 40, CPUPer1k: 0.25, FlatMiBPerMin: 0.1, Rate: 1000, Seconds: 600,
	WindowSeconds: soakWindowWidth.Seconds(), StallFactor: 2}

// rssMiB is the RSS bound in MiB.
func (t soakTarget) rssMiB() float64 { return t.RSSMB * 1e6 / (1 << 20) }

// soakSummary is an arm's soak in a few figures (MiB, minutes).
type soakSummary struct {
	Seconds  float64
	Requests int
	Bad      int
	RPS      float64
	// RateKept: the open loop's backlog at the end was at most 1% of the
	// schedule (the rule of the normal run's open loop).
	RateKept bool
	// Valid: requests ran, every answer was 2xx, the rate was kept and
	// the proxy's memory was readable to the end.
	Valid bool
	// RSSMinute1 is the first sample at or after 60 s; NaN for a shorter
	// run.
	RSSMinute1                   float64
	RSSEnd, AnonEnd, FileEnd     float64
	Peak                         float64 // VmHWM of the last sample
	Slope, AnonSlope, FileSlope  float64 // MiB/min over the second half
	CPUPer1k                     float64 // the whole run
	Flat, RSSPass, CPUPass       bool
	LastHalfSamples, AllRSSKnown int
	// Issue 22: AnonPeak is the largest RssAnon of the samples; AnonPass
	// the run valid, the anon slope flat and AnonPeak within the bound.
	AnonPeak           float64
	AnonFlat, AnonPass bool
	// Stall is the no-stall rule over the full windows.
	Stall stallVerdict
}

// stallVerdict is the no-stall rule over a soak's windows.
type stallVerdict struct {
	// Windows is how many full windows were judged (those that ended by
	// the soak's end); Empty how many of them saw no request end.
	Windows, Empty int
	// Median is the median of their p99s; Worst the largest, in the
	// window starting at WorstAt seconds (an empty window is the worst).
	Median, Worst, WorstAt float64
	// Pass: the run valid, at least two windows, none empty, and every
	// p99 at most StallFactor x Median.
	Pass bool
}

// MarshalJSON writes NaN (not known) as null.
func (s soakSummary) MarshalJSON() ([]byte, error) {
	return jsonMap(map[string]any{"seconds": s.Seconds, "requests": s.Requests, "non2xxAndErrors": s.Bad, "rps": s.RPS,
		"rateKept": s.RateKept, "valid": s.Valid, "rssMinute1MiB": jsonNum(s.RSSMinute1), "rssEndMiB": s.RSSEnd,
		"rssAnonEndMiB": s.AnonEnd, "rssFileEndMiB": s.FileEnd, "peakRssMiB": s.Peak,
		"slopeMiBPerMinLastHalf": jsonNum(s.Slope), "anonSlopeMiBPerMinLastHalf": jsonNum(s.AnonSlope),
		"fileSlopeMiBPerMinLastHalf": jsonNum(s.FileSlope), "proxyCoreSecondsPer1k": jsonNum(s.CPUPer1k),
		"flat": s.Flat, "rssPass": s.RSSPass, "cpuPass": s.CPUPass, "lastHalfSamples": s.LastHalfSamples,
		"anonPeakMiB": s.AnonPeak, "anonFlat": s.AnonFlat, "anonPass": s.AnonPass,
		"stall": map[string]any{"windows": s.Stall.Windows, "emptyWindows": s.Stall.Empty, "medianWindowP99Ms": jsonNum(s.Stall.Median),
			"worstWindowP99Ms": jsonNum(s.Stall.Worst), "worstWindowStartSeconds": jsonNum(s.Stall.WorstAt), "pass": s.Stall.Pass}})
}

// jsonMap marshals m (a type's JSON with NaN made null).
func jsonMap(m map[string]any) ([]byte, error) { return json.Marshal(m) }

// slope is the least-squares slope of ys over xs; NaN for fewer than two
// points or no spread in xs.
func slope(xs, ys []float64) float64 {
	n := len(xs)
	if n < 2 || len(ys) != n {
		return math.NaN()
	}
	var mx, my float64
	for i := range n {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx float64
	for i := range n {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

// judgeStall applies the no-stall rule to the windows that ended by
// seconds (the soak's length): the later ones hold only its stragglers.
func judgeStall(windows []soakWindow, seconds float64, t soakTarget) stallVerdict {
	v := stallVerdict{Median: math.NaN(), Worst: math.NaN(), WorstAt: math.NaN()}
	var p99s []float64
	for _, w := range windows {
		if w.Start+t.WindowSeconds > seconds+1e-9 {
			continue
		}
		v.Windows++
		p := w.P99
		if w.Requests == 0 || math.IsNaN(p) {
			v.Empty++
			p = math.Inf(1) // no request ended: the worst stall
		}
		if math.IsNaN(v.Worst) || p > v.Worst {
			v.Worst, v.WorstAt = p, w.Start
		}
		p99s = append(p99s, p)
	}
	if len(p99s) > 0 {
		v.Median = spreadOf(p99s).Median
	}
	v.Pass = v.Windows >= 2 && v.Empty == 0 && !math.IsNaN(v.Median) && v.Worst <= t.StallFactor*v.Median
	return v
}

// summarizeSoak sums up an arm's samples (the first one the baseline at
// 0 s) and windows against target.
func summarizeSoak(samples []soakSample, windows []soakWindow, rate float64, missed int, target soakTarget) soakSummary {
	s := soakSummary{RSSMinute1: math.NaN(), Slope: math.NaN(), AnonSlope: math.NaN(), FileSlope: math.NaN(), CPUPer1k: math.NaN()}
	if len(samples) == 0 {
		return s
	}
	s.countSamples(samples, rate, missed)
	s.readMemory(samples)
	s.judgeMemoryAndCPU(samples[0], samples[len(samples)-1], target)
	s.Stall = judgeStall(windows, s.Seconds, target)
	s.Stall.Pass = s.Stall.Pass && s.Valid
	return s
}

// countSamples sets the run's length, requests, bad answers, rate and
// validity from its samples (at least one).
func (s *soakSummary) countSamples(samples []soakSample, rate float64, missed int) {
	last := samples[len(samples)-1]
	s.Seconds, s.Requests = last.Elapsed, last.Total
	for _, sm := range samples {
		s.Bad += sm.Bad
		if sm.RSS.RSS > 0 {
			s.AllRSSKnown++
		}
	}
	if s.Seconds > 0 {
		s.RPS = float64(s.Requests) / s.Seconds
	}
	s.RateKept = missed == 0 || float64(missed) <= 0.01*rate*s.Seconds
	s.Valid = s.Requests > 0 && s.Bad == 0 && s.RateKept && last.RSS.RSS > 0 && s.AllRSSKnown == len(samples)
}

// readMemory sets the memory figures from the samples (at least one):
// the resident set at one minute and at the end, the peaks, and the
// slopes over the second half.
func (s *soakSummary) readMemory(samples []soakSample) {
	last := samples[len(samples)-1]
	for _, sm := range samples {
		if sm.Elapsed >= 60 && sm.RSS.RSS > 0 {
			s.RSSMinute1 = mib(sm.RSS.RSS)
			break
		}
	}
	s.RSSEnd, s.AnonEnd, s.FileEnd, s.Peak = mib(last.RSS.RSS), mib(last.RSS.Anon), mib(last.RSS.File), mib(last.RSS.HWM)
	var xs, ys, as, fs []float64
	for _, sm := range samples {
		if sm.Elapsed >= last.Elapsed/2 && sm.RSS.RSS > 0 {
			xs = append(xs, sm.Elapsed/60)
			ys = append(ys, mib(sm.RSS.RSS))
			as = append(as, mib(sm.RSS.Anon))
			fs = append(fs, mib(sm.RSS.File))
		}
	}
	s.LastHalfSamples = len(xs)
	s.Slope, s.AnonSlope, s.FileSlope = slope(xs, ys), slope(xs, as), slope(xs, fs)
	for _, sm := range samples {
		s.AnonPeak = math.Max(s.AnonPeak, mib(sm.RSS.Anon))
	}
}

// judgeMemoryAndCPU sets the CPU per 1,000 requests between the first
// and the last sample and judges it and the memory figures (set by
// countSamples and readMemory) against target.
func (s *soakSummary) judgeMemoryAndCPU(first, last soakSample, target soakTarget) {
	s.CPUPer1k = perThousand(last.CPU-first.CPU, last.Total-first.Total)
	s.Flat = !math.IsNaN(s.Slope) && s.Slope <= target.FlatMiBPerMin
	s.RSSPass = s.Valid && s.Flat && s.Peak > 0 && s.Peak <= target.rssMiB()
	s.CPUPass = s.Valid && !math.IsNaN(s.CPUPer1k) && s.CPUPer1k <= target.CPUPer1k
	s.AnonFlat = !math.IsNaN(s.AnonSlope) && s.AnonSlope <= target.FlatMiBPerMin
	s.AnonPass = s.Valid && s.AnonFlat && s.AnonPeak > 0 && s.AnonPeak <= target.rssMiB()
}

// soakVerdict is an arm's plain PASS/MISS statement: memory, then CPU,
// with why, and whether the run was as long and as fast as the target's.
func soakVerdict(r *soakRun, t soakTarget) (memory, cpu, caveat string) {
	s := r.Summary
	pass := map[bool]string{true: "PASS", false: "MISS"}
	switch {
	case !s.Valid:
		memory = "MISS (invalid run: " + strings.Join(soakInvalidWhy(r), ", ") + ")"
		cpu = memory
	default:
		memory = fmt.Sprintf("%s: peak %s MiB vs %s MiB (%g MB), slope %s MiB/min over the last half (flat means <= %g)",
			pass[s.RSSPass], fmtNum(s.Peak, 1), fmtNum(t.rssMiB(), 1), t.RSSMB, fmtNum(s.Slope, 3), t.FlatMiBPerMin)
		cpu = fmt.Sprintf("%s: %s core-s/1k vs %g", pass[s.CPUPass], fmtNum(s.CPUPer1k, 3), t.CPUPer1k)
	}
	var c []string
	if s.Seconds < t.Seconds {
		c = append(c, fmt.Sprintf("ran %.0f s, not the target's %.0f s", s.Seconds, t.Seconds))
	}
	if r.Rate != t.Rate {
		c = append(c, fmt.Sprintf("at %g/s, not the target's %g/s", r.Rate, t.Rate))
	}
	if len(c) > 0 {
		caveat = "indicative only: " + strings.Join(c, "; ")
	}
	return memory, cpu, caveat
}

// soakIssue22Verdict is an arm's PASS/MISS against issue 22's soak
// targets: the anonymous resident set, and no stall.
func soakIssue22Verdict(r *soakRun, t soakTarget) (anon, stall string) {
	s := r.Summary
	pass := map[bool]string{true: "PASS", false: "MISS"}
	if !s.Valid {
		inv := "MISS (invalid run: " + strings.Join(soakInvalidWhy(r), ", ") + ")"
		return inv, inv
	}
	anon = fmt.Sprintf("%s: peak RssAnon %s MiB vs %s MiB (%g MB), anon slope %s MiB/min over the last half (flat means <= %g)",
		pass[s.AnonPass], fmtNum(s.AnonPeak, 1), fmtNum(t.rssMiB(), 1), t.RSSMB, fmtNum(s.AnonSlope, 3), t.FlatMiBPerMin)
	st := s.Stall
	stall = fmt.Sprintf("%s: worst %gs window's p99 %s ms (window at %s s) vs %g x the median window's %s ms, over %d windows",
		pass[st.Pass], t.WindowSeconds, fmtNum(st.Worst, 2), fmtNum(st.WorstAt, 0), t.StallFactor, fmtNum(st.Median, 2), st.Windows)
	if st.Empty > 0 {
		stall += fmt.Sprintf(", %d with no request ended", st.Empty)
	}
	return anon, stall
}

// soakVerdictLine is an arm's verdict on one line, for stderr.
func soakVerdictLine(r *soakRun, t soakTarget) string {
	m, c, caveat := soakVerdict(r, t)
	anon, stall := soakIssue22Verdict(r, t)
	line := fmt.Sprintf("%s (retention.maxPerResource %d): memory %s; CPU %s; RSS anon %s; no stall %s", r.Arm, r.Retention.MaxPerResource, m, c, anon, stall)
	if caveat != "" {
		line += " [" + caveat + "]"
	}
	return line
}

// writeSoakOutputs writes soak.json, soak.svg and SOAK.md into dir.
func writeSoakOutputs(dir string, rep *soakReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: soak.json: %w", err)
	}
	files := map[string][]byte{
		"soak.json": append(js, '\n'),
		"soak.svg":  []byte(renderSoakSVG(rep.Runs, rep.Target)),
		"SOAK.md":   []byte(renderSoakMarkdown(rep)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// soakFlags is the command line that reproduces the soak.
func soakFlags(o options) string {
	f := fmt.Sprintf("-soak %s -soak-arms '%s' -soak-rate %g -soak-sample %s -soak-retention %d",
		o.Soak, o.SoakArms, o.SoakRate, o.SoakSample, o.SoakRetention)
	if !o.Pin {
		f += " -pin=false"
	}
	return f
}

// renderSoakMarkdown is SOAK.md.
func renderSoakMarkdown(rep *soakReport) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m, t := rep.Machine, rep.Target
	p("# fencegate soak results\n\n")
	p("Written by `go run ./e2e/bench %s` (see [doc.go](doc.go)).", soakFlags(rep.Options))
	if rep.Interrupted {
		p(" **The soak was interrupted**: the figures cover what ran before.")
	}
	p("\n\n")
	rep.machineTable(p)
	if rep.busy() {
		p("**The machine was busy**: other work shared its %d CPUs; CPU figures are pessimistic and latency noisier.\n\n", m.CPUs)
	}
	p("## Target\n\n")
	p("Issue 12: <= %g core-seconds per 1,000 requests and <= %g MB RSS, flat over a %.0f-minute run, at %g requests/s. ", t.CPUPer1k, t.RSSMB, t.Seconds/60, t.Rate)
	p("Judged here as: **memory PASS** when the run is valid, the proxy's peak resident set (VmHWM, anonymous + file-backed + shared, read at the end) is at most %g x 10^6 bytes (%s MiB), ", t.RSSMB, fmtNum(t.rssMiB(), 1))
	p("and the least-squares slope of its VmRSS over the run's second half is at most %g MiB/min (flat); **CPU PASS** when the run is valid and the proxy's utime+stime over the whole load, per 1,000 requests ended, is at most %g. ", t.FlatMiBPerMin, t.CPUPer1k)
	p("A run is valid when every answer was 2xx and the open loop kept its rate (backlog at the end at most 1%% of the schedule); an invalid run is a MISS.\n\n")
	p("Issue 22: RSS <= %g MB anonymous at %g requests/s for %.0f minutes, flat, and no stall. Judged here as: **RSS anon PASS** when the run is valid, the largest RssAnon of the samples is at most %s MiB and its least-squares slope over the run's second half at most %g MiB/min; ",
		t.RSSMB, t.Rate, t.Seconds/60, fmtNum(t.rssMiB(), 1), t.FlatMiBPerMin)
	p("**no stall PASS** when the run is valid and, over every full %g s window of the load (by each request's end; compaction passes included), each window's p99 is at most %g x the median of the windows' p99s (a window in which no request ended is a stall). ", t.WindowSeconds, t.StallFactor)
	p("A soak shorter than %.0f minutes or at another rate is shown but \"not measured\".\n\n", t.Seconds/60)
	p("## Targets\n\n%s\n\n", rep.loadLine())
	renderTargets(p, rep.Targets, nil)
	p("## Summary\n\n")
	p("| arm | retention.maxPerResource | seconds | rps | non-2xx | RSS at 1 min MiB | RSS end MiB | anon end | file end | peak MiB | anon peak MiB | slope last half MiB/min (anon / file) | core-s/1k | worst / median 10 s p99 ms | memory | CPU | RSS anon | no stall |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|---|---|---|\n")
	verdict := map[bool]string{true: "**PASS**", false: "**MISS**"}
	for _, r := range rep.Runs {
		s := r.Summary
		p("| %s | %d | %.0f | %s | %d | %s | %s | %s | %s | %s | %s | %s (%s / %s) | %s | %s / %s | %s | %s | %s | %s |\n", r.Arm, r.Retention.MaxPerResource, s.Seconds,
			fmtNum(s.RPS, 0), s.Bad, fmtNum(s.RSSMinute1, 1), fmtNum(s.RSSEnd, 1), fmtNum(s.AnonEnd, 1), fmtNum(s.FileEnd, 1), fmtNum(s.Peak, 1), fmtNum(s.AnonPeak, 1),
			fmtNum(s.Slope, 3), fmtNum(s.AnonSlope, 3), fmtNum(s.FileSlope, 3), fmtNum(s.CPUPer1k, 3), fmtNum(s.Stall.Worst, 2), fmtNum(s.Stall.Median, 2),
			verdict[s.RSSPass], verdict[s.CPUPass], verdict[s.AnonPass], verdict[s.Stall.Pass])
	}
	p("\n")
	for _, r := range rep.Runs {
		mem, cpu, caveat := soakVerdict(r, t)
		anon, stall := soakIssue22Verdict(r, t)
		p("- **%s**: memory %s. CPU %s. RSS anon %s. No stall %s.", r.Arm, mem, cpu, anon, stall)
		if caveat != "" {
			p(" (%s.)", caveat)
		}
		p("\n")
	}
	p("\n")
	if d := rep.Direct; d != nil {
		p("The direct arm (no proxy) at the same rate, %.0f s after a 1 s warm-up, once before the sidecars: p50 %s ms, p99 %s ms (%d requests, %d non-2xx); the `+p50` and `+p99` columns are the sidecar's interval percentiles minus these.\n\n",
			d.Seconds, fmtNum(d.Latency.P50, 2), fmtNum(d.Latency.P99, 2), d.Requests, d.Non2xx)
	}
	p("![proxy RSS over time](soak.svg)\n\n")
	for _, r := range rep.Runs {
		renderSoakArm(p, r)
	}
	if len(rep.Notes) > 0 {
		p("## Notes\n\n")
		for _, n := range rep.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
	p("The data of every sample: [soak.json](soak.json).\n")
	return b.String()
}

// renderSoakArm is an arm's section of SOAK.md: its configuration, its
// samples and its summary row.
func renderSoakArm(p func(string, ...any), r *soakRun) {
	ret := r.Retention
	p("## %s\n\n", r.Arm)
	p("Sidecar: store %s, status mode %s, %s grants, enforce mode; open loop at %g requests/s, %d workers each on its own resource (%d resources), latency from each request's intended start; sampled every %s for %s. ",
		r.Store, r.Status, r.Alg, r.Rate, r.Workers, r.Workers, secondsDur(r.Sample), secondsDur(r.Seconds))
	p("Retention: maxPerResource %d, maxAge %s, interval %s, batchSize %d: after a compaction pass the store holds at most %d receipts (maxPerResource x %d resources). ",
		ret.MaxPerResource, ret.MaxAge, ret.Interval, ret.BatchSize, ret.MaxPerResource*r.Workers, r.Workers)
	p("`receipts` and `store MiB` are the sidecar's `fencegate_proxy_store_receipts` and `fencegate_proxy_store_bytes` gauges (bolt: the file's size; memory: the store's estimated heap), which it refreshes after each compaction pass (at start and every %s), so it lags by up to that. ", ret.Interval)
	p("Requests, non-2xx, core-s/1k and latency are over the interval ending at the row's time; RSS columns are read at that time (`/proc/PID/status` VmRSS, RssAnon, RssFile).\n\n")
	p("`slow` columns count, over the interval, the sidecar's operations that took longer than %.0f ms, by where the time went: its store (`fencegate_proxy_store_seconds`), its anchor's registry calls (`fencegate_proxy_anchor_call_seconds`), its backend (`fencegate_proxy_backend_seconds`).\n\n", slowOver*1000)
	p("| elapsed s | requests | rps | non-2xx | RSS MiB | anon MiB | file MiB | core-s/1k | receipts | store MiB | p50 ms | p99 ms | +p50 ms | +p99 ms | slow store | slow anchor | slow backend |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sm := range r.Samples {
		p("| %.0f | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sm.Elapsed, sm.Requests, fmtNum(sm.RPS, 0), sm.Bad,
			fmtNum(mib(sm.RSS.RSS), 1), fmtNum(mib(sm.RSS.Anon), 1), fmtNum(mib(sm.RSS.File), 1), fmtNum(sm.CPUPer1k, 3),
			fmtNum(sm.Receipts, 0), fmtNum(sm.StoreBytes/(1<<20), 1), fmtNum(sm.P50, 2), fmtNum(sm.P99, 2), fmtNum(sm.AddP50, 2), fmtNum(sm.AddP99, 2),
			fmtNum(sm.Slow[0], 0), fmtNum(sm.Slow[1], 0), fmtNum(sm.Slow[2], 0))
	}
	s := r.Summary
	p("| **summary** | %d | %s | %d | 1 min %s → end %s (slope %s/min) | end %s (%s/min) | end %s (%s/min) | **%s** (whole run) | | | | | | | | | |\n\n",
		s.Requests, fmtNum(s.RPS, 0), s.Bad, fmtNum(s.RSSMinute1, 1), fmtNum(s.RSSEnd, 1), fmtSigned(s.Slope),
		fmtNum(s.AnonEnd, 1), fmtSigned(s.AnonSlope), fmtNum(s.FileEnd, 1), fmtSigned(s.FileSlope), fmtNum(s.CPUPer1k, 3))
	if len(r.Windows) > 0 {
		p("Windows of %s by each request's end (the no-stall rule judges those that ended by the soak's end):\n\n", soakWindowWidth)
		p("| window start s | requests | non-2xx | p50 ms | p99 ms | × median p99 |\n|---:|---:|---:|---:|---:|---:|\n")
		for _, w := range r.Windows {
			p("| %.0f | %d | %d | %s | %s | %s |\n", w.Start, w.Requests, w.Bad, fmtNum(w.P50, 2), fmtNum(w.P99, 2), fmtNum(w.P99/s.Stall.Median, 2))
		}
		p("\n")
	}
	if r.Missed > 0 {
		p("The open loop's backlog at the end: %d requests scheduled and never sent.\n\n", r.Missed)
	}
	if r.FirstError != "" {
		p("First error: %s\n\n", r.FirstError)
	}
}

// secondsDur is s seconds as a duration, for reading.
func secondsDur(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

// fmtSigned is a slope with its sign, "–" for NaN.
func fmtSigned(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%+.3f", v)
}

// errMetric is returned when a metrics page lacks a metric or holds it
// malformed.
var errMetric = errors.New("bench: metric")

// parseMetric returns the value of the unlabelled sample name on a
// Prometheus text-format page.
// slowTotals reads, for each of soakSlowSources, how many observations of
// its histogram (every label set) took longer than slowOver: its count
// minus its bucket at slowOver. A histogram not on the page, or without
// that bucket, is NaN.
func slowTotals(page string) [3]float64 {
	out := [3]float64{math.NaN(), math.NaN(), math.NaN()}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		return out
	}
	for i, src := range soakSlowSources {
		if f := fams[src.family]; f != nil {
			out[i] = slowIn(f)
		}
	}
	return out
}

// slowIn is slowTotals of one histogram family (NaN without the bucket).
func slowIn(f *dto.MetricFamily) float64 {
	total := 0.0
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			return math.NaN()
		}
		at := math.NaN()
		for _, b := range h.GetBucket() {
			if math.Abs(b.GetUpperBound()-slowOver) < 1e-9 {
				at = float64(b.GetCumulativeCount())
			}
		}
		if math.IsNaN(at) {
			return math.NaN()
		}
		total += float64(h.GetSampleCount()) - at
	}
	return total
}

func parseMetric(page, name string) (float64, error) {
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return 0, fmt.Errorf("%w: %s: %q", errMetric, name, rest)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%w: %s: %q", errMetric, name, rest)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%w: no %s", errMetric, name)
}
