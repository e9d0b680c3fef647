package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSlope(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4}
	ys := []float64{10, 12, 14, 16, 18}
	if got := slope(xs, ys); math.Abs(got-2) > 1e-12 {
		t.Errorf("slope of y = 2x+10: %v, want 2", got)
	}
	// Noise around a flat line: least squares, not last-minus-first.
	if got := slope([]float64{0, 1, 2, 3}, []float64{5, 6, 4, 5}); math.Abs(got-(-0.2)) > 1e-12 {
		t.Errorf("slope = %v, want -0.2", got)
	}
	for _, c := range []struct{ xs, ys []float64 }{{nil, nil}, {[]float64{1}, []float64{1}}, {[]float64{2, 2}, []float64{1, 5}}, {[]float64{1, 2}, []float64{1}}} {
		if got := slope(c.xs, c.ys); !math.IsNaN(got) {
			t.Errorf("slope(%v, %v) = %v, want NaN", c.xs, c.ys, got)
		}
	}
}

// soakSamples is a 10-minute soak sampled every 30 s at 1,000/s: RSS
// climbs 1 MiB per sample for the first 2 minutes, then follows
// tail(i) (MiB over the plateau at 30 MiB); 0.2 core-s per 1k.
func soakSamples(tail func(i int) float64) []soakSample {
	var out []soakSample
	for i := 0; i <= 20; i++ {
		rss := 26.0 + float64(min(i, 4))
		if i > 4 {
			rss = 30 + tail(i)
		}
		kib := int64(rss * 1024)
		sm := soakSample{Elapsed: float64(i * 30), Total: i * 30000, CPU: 10 + float64(i)*6,
			RSS: rssKB{RSS: kib, Anon: kib - 4096, File: 4096, HWM: kib}, Receipts: math.NaN(), StoreBytes: math.NaN()}
		if i > 0 {
			sm.Requests, sm.RPS, sm.CPUPer1k = 30000, 1000, 0.2
			sm.P50, sm.P99, sm.AddP50, sm.AddP99 = 1.2, 4.5, 0.5, 2.8
		}
		out = append(out, sm)
	}
	return out
}

func TestSummarizeSoakFlatPass(t *testing.T) {
	s := summarizeSoak(soakSamples(func(int) float64 { return 0 }), nil, 1000, 0, defaultSoakTarget)
	if s.Requests != 600000 || s.Seconds != 600 || s.RPS != 1000 || !s.Valid || !s.RateKept {
		t.Fatalf("summary %+v", s)
	}
	if s.RSSMinute1 != 28 || s.RSSEnd != 30 || s.FileEnd != 4 || s.AnonEnd != 26 || s.Peak != 30 {
		t.Errorf("RSS at 1 min %v, end %v (anon %v, file %v), peak %v; want 28, 30 (26, 4), 30", s.RSSMinute1, s.RSSEnd, s.AnonEnd, s.FileEnd, s.Peak)
	}
	// 6 core-s per 30,000 requests.
	if math.Abs(s.CPUPer1k-0.2) > 1e-12 {
		t.Errorf("core-s/1k %v, want 0.2", s.CPUPer1k)
	}
	// The second half (from 300 s) is flat: the climb is not in it.
	if s.LastHalfSamples != 11 || s.Slope != 0 || !s.Flat || !s.RSSPass || !s.CPUPass {
		t.Errorf("last half %d samples, slope %v, flat %v, rss %v, cpu %v: want 11, 0, flat, PASS, PASS", s.LastHalfSamples, s.Slope, s.Flat, s.RSSPass, s.CPUPass)
	}
}

func TestSummarizeSoakMisses(t *testing.T) {
	// A leak of 0.5 MiB per sample (1 MiB/min) in the second half.
	leak := summarizeSoak(soakSamples(func(i int) float64 { return 0.5 * float64(max(i-10, 0)) }), nil, 1000, 0, defaultSoakTarget)
	if leak.Flat || leak.RSSPass || !leak.CPUPass || math.Abs(leak.Slope-1) > 1e-9 {
		t.Errorf("leak: slope %v flat %v rss %v cpu %v; want slope 1, not flat, MISS, PASS", leak.Slope, leak.Flat, leak.RSSPass, leak.CPUPass)
	}
	// Flat but above 40 MB (38.1 MiB): 38.0 passes, 38.2 does not.
	for _, c := range []struct {
		mib  float64
		pass bool
	}{{38.0, true}, {38.2, false}} {
		sm := soakSamples(func(int) float64 { return 0 })
		sm[len(sm)-1].RSS.HWM = int64(c.mib * 1024)
		if s := summarizeSoak(sm, nil, 1000, 0, defaultSoakTarget); s.RSSPass != c.pass {
			t.Errorf("peak %v MiB: RSS pass %v, want %v", c.mib, s.RSSPass, c.pass)
		}
	}
	// CPU over the bound.
	sm := soakSamples(func(int) float64 { return 0 })
	sm[len(sm)-1].CPU += 0.6 // 0.201 core-s/1k: still a PASS
	if s := summarizeSoak(sm, nil, 1000, 0, defaultSoakTarget); !s.CPUPass {
		t.Errorf("core-s/1k %v: want PASS", s.CPUPer1k)
	}
	sm[len(sm)-1].CPU += 40 // 0.268
	if s := summarizeSoak(sm, nil, 1000, 0, defaultSoakTarget); s.CPUPass {
		t.Errorf("core-s/1k %v: want MISS", s.CPUPer1k)
	}
	// Invalid runs miss both: a non-2xx answer, a lost rate, an exited proxy.
	bad := soakSamples(func(int) float64 { return 0 })
	bad[7].Bad = 1
	behind := summarizeSoak(soakSamples(func(int) float64 { return 0 }), nil, 1000, 6001, defaultSoakTarget)
	gone := soakSamples(func(int) float64 { return 0 })
	gone[len(gone)-1].RSS = rssKB{}
	for name, s := range map[string]soakSummary{
		"non-2xx": summarizeSoak(bad, nil, 1000, 0, defaultSoakTarget),
		"behind":  behind,
		"exited":  summarizeSoak(gone, nil, 1000, 0, defaultSoakTarget),
	} {
		if s.Valid || s.RSSPass || s.CPUPass {
			t.Errorf("%s: valid %v rss %v cpu %v; want an invalid MISS", name, s.Valid, s.RSSPass, s.CPUPass)
		}
	}
	// 1% of the schedule behind is still keeping the rate.
	if s := summarizeSoak(soakSamples(func(int) float64 { return 0 }), nil, 1000, 6000, defaultSoakTarget); !s.RateKept {
		t.Error("6000 missed of 600,000: rate not kept, want kept")
	}
	// A run shorter than a minute has no minute-1 figure.
	short := soakSamples(func(int) float64 { return 0 })[:2]
	if s := summarizeSoak(short, nil, 1000, 0, defaultSoakTarget); !math.IsNaN(s.RSSMinute1) || s.Seconds != 30 {
		t.Errorf("short run: RSS at 1 min %v, seconds %v", s.RSSMinute1, s.Seconds)
	}
	if s := summarizeSoak(nil, nil, 1000, 0, defaultSoakTarget); s.Valid || s.RSSPass || s.CPUPass || !math.IsNaN(s.Slope) {
		t.Errorf("no samples: %+v", s)
	}
}

func TestIntervalRecorder(t *testing.T) {
	var r intervalRecorder
	now := time.Unix(0, 0)
	r.observe(now, 2*time.Millisecond, 200, nil)
	r.observe(now, 3*time.Millisecond, 409, nil)
	r.observe(now, time.Millisecond, 0, errors.New("refused"))
	req, total, bad, lat := r.take()
	if req != 3 || total != 3 || bad != 2 || len(lat) != 2 {
		t.Errorf("take = %d requests, %d total, %d bad, %d latencies; want 3, 3, 2, 2", req, total, bad, len(lat))
	}
	r.observe(now, time.Millisecond, 204, nil)
	if req, total, bad, lat := r.take(); req != 1 || total != 4 || bad != 0 || len(lat) != 1 {
		t.Errorf("second interval = %d, %d, %d, %d; want 1, 4, 0, 1", req, total, bad, len(lat))
	}
}

func TestPerThousand(t *testing.T) {
	if got := perThousand(2.5, 10000); got != 0.25 {
		t.Errorf("perThousand = %v", got)
	}
	if !math.IsNaN(perThousand(1, 0)) || !math.IsNaN(perThousand(math.NaN(), 5)) {
		t.Error("no requests or no CPU must give NaN")
	}
}

func TestParseStatusRSS(t *testing.T) {
	status := "Name:\tfencegate\nVmHWM:\t   40960 kB\nVmRSS:\t   30720 kB\nRssAnon:\t   20480 kB\nRssFile:\t   10000 kB\nRssShmem:\t     240 kB\nThreads:\t9\n"
	m, err := parseStatusRSS(status)
	if err != nil || m != (rssKB{RSS: 30720, HWM: 40960, Anon: 20480, File: 10000, Shmem: 240}) {
		t.Fatalf("parseStatusRSS = %+v, %v", m, err)
	}
	for _, bad := range []string{
		"VmRSS: 1 kB\nVmHWM: 1 kB\n", // no Rss* (a kernel before 4.5)
		strings.Replace(status, "RssFile:\t   10000 kB", "RssFile:\t 10000 MB", 1),
		strings.Replace(status, "RssAnon:\t   20480 kB", "RssAnon:\t -1 kB", 1),
		status + "RssAnon:\t 1 kB\n", // twice
	} {
		if _, err := parseStatusRSS(bad); !errors.Is(err, errProcStat) {
			t.Errorf("parseStatusRSS(%q) error = %v, want errProcStat", bad, err)
		}
	}
	if m, err := readRSS(os.Getpid()); err != nil || m.RSS <= 0 || m.Anon+m.File+m.Shmem != m.RSS {
		t.Errorf("readRSS(self) = %+v, %v; want RSS = anon + file + shmem", m, err)
	}
}

func FuzzParseStatusRSS(f *testing.F) {
	f.Add("VmHWM:\t1 kB\nVmRSS:\t1 kB\nRssAnon:\t1 kB\nRssFile:\t0 kB\nRssShmem:\t0 kB\n")
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := parseStatusRSS(s); err == nil && (m.RSS < 0 || m.HWM < 0 || m.Anon < 0 || m.File < 0 || m.Shmem < 0) {
			t.Errorf("negative field accepted: %+v", m)
		}
	})
}

func TestParseMetric(t *testing.T) {
	page := "# HELP fencegate_proxy_store_receipts Receipts in the fenced store.\n# TYPE fencegate_proxy_store_receipts gauge\n" +
		"fencegate_proxy_store_receipts_total 9\nfencegate_proxy_store_receipts 64000\nother{a=\"b\"} 1\n"
	if v, err := parseMetric(page, "fencegate_proxy_store_receipts"); err != nil || v != 64000 {
		t.Errorf("parseMetric = %v, %v; want 64000", v, err)
	}
	if v, err := parseMetric("m 1.5e3 1712345678000\n", "m"); err != nil || v != 1500 {
		t.Errorf("with a timestamp: %v, %v", v, err)
	}
	for _, bad := range []string{"", "m_total 1\n", "m x\n", "m NaN\n", "m +Inf\n", "m\n", "m 1 2 3\n"} {
		if _, err := parseMetric(bad, "m"); !errors.Is(err, errMetric) {
			t.Errorf("parseMetric(%q) error = %v, want errMetric", bad, err)
		}
	}
}

func FuzzParseMetric(f *testing.F) {
	f.Add("m 1\n", "m")
	f.Add("# HELP m x\nm{a=\"b\"} 2\nm 3 4\n", "m")
	f.Fuzz(func(t *testing.T, page, name string) {
		if v, err := parseMetric(page, name); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("non-finite value accepted: %v", v)
		}
	})
}

func TestSoakOptions(t *testing.T) {
	if o, err := parseOptions(nil, io.Discard); err != nil || o.Soak != 0 || o.SoakArms != "" || o.SoakRate != 0 || o.SoakRetention != 0 {
		t.Fatalf("no soak: %+v, %v; want the soak's settings zero (out of results.json)", o, err)
	}
	o, err := parseOptions([]string{"-soak", "1m"}, io.Discard)
	if err != nil || o.Soak != time.Minute || o.SoakRate != 1000 || o.SoakSample != 30*time.Second || o.SoakRetention != 1000 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	var names []string
	for _, f := range soakArmsMatching(regexp.MustCompile(o.SoakArms)) {
		names = append(names, f.name())
	}
	if strings.Join(names, ",") != "fg-bolt-proof-EdDSA,fg-redis-proof-EdDSA" {
		t.Errorf("default soak arms %v", names)
	}
	o, err = parseOptions([]string{"-soak", "10m", "-soak-arms", "redis-proof", "-soak-rate", "500", "-soak-sample", "5s", "-soak-retention", "50"}, io.Discard)
	if err != nil || o.Soak != 10*time.Minute || o.SoakArms != "redis-proof" || o.SoakRate != 500 || o.SoakSample != 5*time.Second || o.SoakRetention != 50 {
		t.Errorf("set: %+v, %v", o, err)
	}
	for _, bad := range [][]string{
		{"-soak", "-1s"},
		{"-soak", "1m", "-soak-arms", "no-such-arm"},
		{"-soak", "1m", "-soak-arms", "("},
		{"-soak", "1m", "-soak-rate", "0"},
		{"-soak", "1m", "-soak-sample", "0s"},
		{"-soak", "1m", "-soak-retention", "0"},
	} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("parseOptions(%v) accepted", bad)
		}
	}
	if y := newSoakRetention(50, time.Minute).yaml(); y != "retention: {maxPerResource: 50, maxAge: 168h0m0s, interval: 1m0s, batchSize: 1000}\n" {
		t.Errorf("retention yaml %q", y)
	}
}

// soakReportSample is a two-arm report: one passing 10-minute soak and
// one short, leaking soak with a rejected request.
func soakReportSample() *soakReport {
	o := options{Soak: 10 * time.Minute, SoakArms: defaultSoakArms, SoakRate: 1000, SoakSample: 30 * time.Second, SoakRetention: 100, Pin: true}
	good := &soakRun{Arm: "fg-bolt-proof-EdDSA", Store: "bolt", Status: "proof", Alg: "EdDSA", Rate: 1000, Workers: 64,
		Seconds: 600, Sample: 30, Retention: newSoakRetention(100, time.Minute), Samples: soakSamples(func(int) float64 { return 0 }),
		Windows: soakWindows(61, func(int) float64 { return 4.5 })}
	good.Summary = summarizeSoak(good.Samples, good.Windows, good.Rate, 0, defaultSoakTarget)
	leakSamples := soakSamples(func(i int) float64 { return float64(i) })[:4]
	leakSamples[3].Bad = 2
	leakSamples[2].Receipts, leakSamples[2].StoreBytes = 12345, 3<<20
	leak := &soakRun{Arm: `fg-bolt<"proof">&`, Store: "bolt", Status: "proof", Alg: "EdDSA", Rate: 1000, Workers: 64,
		Seconds: 90, Sample: 30, Retention: newSoakRetention(100, time.Minute), Samples: leakSamples, FirstError: "HTTP Conflict",
		Windows: soakWindows(9, func(i int) float64 { return 4.5 + float64(i) })}
	leak.Summary = summarizeSoak(leak.Samples, leak.Windows, leak.Rate, 0, defaultSoakTarget)
	rep := &soakReport{runInfo: runInfo{Machine: machineInfo{CPUModel: "Test CPU", CPUs: 2, Commit: "abc123", Date: "2026-11-30 12:00 UTC"},
		Options: o, LoadAvgStart: "0.1 0.1 0.1", LoadAvgEnd: "0.1 0.1 0.1"}, Target: defaultSoakTarget,
		Direct: &soakBaseline{Seconds: 30, Requests: 30000, Latency: latencySummary{P50: 0.7, P99: 1.7}},
		Runs:   []*soakRun{good, leak}}
	rep.Targets = evaluateSoakTargets(issue22Targets(), rep.Runs, rep.Target)
	return rep
}

// soakWindows are n 10 s windows of 10,000 requests each, window i's p99
// p99(i) ms.
func soakWindows(n int, p99 func(i int) float64) []soakWindow {
	out := make([]soakWindow, n)
	for i := range out {
		out[i] = soakWindow{Start: float64(10 * i), Requests: 10000, P50: 1.2, P99: p99(i)}
	}
	return out
}

func TestRenderSoakMarkdown(t *testing.T) {
	md := renderSoakMarkdown(soakReportSample())
	for _, want := range []string{
		"-soak 10m0s -soak-arms '^fg-(bolt|redis)-proof-EdDSA$' -soak-rate 1000 -soak-sample 30s -soak-retention 100",
		"| commit | abc123 |",
		// The summary table: the good arm passes all four, the other misses them.
		"| fg-bolt-proof-EdDSA | 100 | 600 | 1000 | 0 | 28.0 | 30.0 | 26.0 | 4.0 | 30.0 | 26.0 | 0.000 (0.000 / 0.000) | 0.200 | 4.50 / 4.50 | **PASS** | **PASS** | **PASS** | **PASS** |",
		"**fg-bolt-proof-EdDSA**: memory PASS: peak 30.0 MiB vs 38.1 MiB (40 MB)",
		"RSS anon PASS: peak RssAnon 26.0 MiB vs 38.1 MiB (40 MB)",
		"No stall PASS: worst 10s window's p99 4.50 ms (window at 0 s) vs 2 x the median window's 4.50 ms, over 60 windows.",
		// The Targets table: bolt judged, Redis not soaked.
		"## Targets",
		"| RSS <= 40 MB anonymous at 1,000 req/s for 10 minutes, flat (bolt) | fg-bolt-proof-EdDSA | soak | 26.00 MiB anon | <= 38.15 MiB anon | **PASS**: peak RssAnon;",
		"| no stall: every 10 s window's p99 within 2x the median window's (bolt) | fg-bolt-proof-EdDSA | soak | 1.00 × median window p99 | <= 2.00 × median window p99 | **PASS**: worst 10s window's p99 4.50 ms (at 0 s) over the median window's 4.50 ms, 60 windows |",
		"| fg-redis-proof-EdDSA | soak | – | <= 38.15 MiB anon | not measured: not soaked (-soak-arms) |",
		// The windows table: the window at 600 s ended after the soak.
		"| 590 | 10000 | 0 | 1.20 | 4.50 | 1.00 |",
		"| 600 | 10000 | 0 | 1.20 | 4.50 | 1.00 |",
		"CPU PASS: 0.200 core-s/1k vs 0.25.",
		"memory MISS (invalid run: 2 non-2xx or errors)",
		"indicative only: ran 90 s, not the target's 600 s",
		// Retention as the sidecar ran with it.
		"Retention: maxPerResource 100, maxAge 168h0m0s, interval 1m0s, batchSize 1000: after a compaction pass the store holds at most 6400 receipts",
		// A sample row and the summary row.
		"| 60 | 30000 | 1000 | 0 | 28.0 | 24.0 | 4.0 | 0.200 | – | – | 1.20 | 4.50 | 0.50 | 2.80 |",
		"| **summary** | 600000 | 1000 | 0 | 1 min 28.0 → end 30.0 (slope +0.000/min) | end 26.0 (+0.000/min) | end 4.0 (+0.000/min) | **0.200** (whole run) | | | | | | |",
		"| 90 | 30000 | 1000 | 2 | 29.0 | 25.0 | 4.0 | 0.200 | – |",
		"| 60 | 30000 | 1000 | 0 | 28.0 | 24.0 | 4.0 | 0.200 | 12345 | 3.0 | 1.20 |",
		"First error: HTTP Conflict",
		"p50 0.70 ms, p99 1.70 ms",
		"![proxy RSS over time](soak.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("SOAK.md lacks %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "interrupted") {
		t.Error("a finished soak says interrupted")
	}
	rep := soakReportSample()
	rep.Interrupted = true
	if !strings.Contains(renderSoakMarkdown(rep), "The soak was interrupted") {
		t.Error("an interrupted soak does not say so")
	}
}

func TestRenderSoakSVGWellFormed(t *testing.T) {
	rep := soakReportSample()
	rep.Runs[0].Samples[3].RSS = rssKB{} // unreadable: left out of the lines
	svg := renderSoakSVG(rep.Runs, rep.Target)
	lines, points := 0, 0
	for _, se := range svgElements(t, svg) {
		if se.Name.Local != "polyline" {
			continue
		}
		lines++
		for _, a := range se.Attr {
			if a.Name.Local == "points" {
				points += len(strings.Fields(a.Value))
			}
		}
	}
	// RSS, anon and file for each arm; 20 readable samples and 4.
	if lines != 6 || points != 3*(20+4) {
		t.Errorf("%d polylines with %d points, want 6 with %d", lines, points, 3*24)
	}
	for _, want := range []string{"fg-bolt&lt;&#34;proof&#34;&gt;&amp;", "retention.maxPerResource 100", "elapsed (min)", "elapsed (s)", "target 40 MB"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if !strings.Contains(renderSoakSVG(nil, defaultSoakTarget), "no runs") {
		t.Error("empty plot lacks its note")
	}
}

func TestNiceCeilAndTicks(t *testing.T) {
	for in, want := range map[float64]float64{38.1: 50, 0.3: 0.5, 100: 100, 101: 200, 21: 25, 0: 1} {
		if got := niceCeil(in); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
	if got := ticks(50); len(got) != 6 || got[5] != 50 {
		t.Errorf("ticks(50) = %v", got)
	}
	if got := fmtAxis(7.5); got != "7.5" {
		t.Errorf("fmtAxis(7.5) = %q", got)
	}
}

func TestWriteSoakOutputs(t *testing.T) {
	dir := t.TempDir()
	if err := writeSoakOutputs(dir, soakReportSample()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "soak.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Arms []struct {
			Arm       string
			Retention struct{ MaxPerResource int }
			Samples   []map[string]any
			Summary   map[string]any
		}
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("soak.json: %v", err)
	}
	if len(back.Arms) != 2 || len(back.Arms[0].Samples) != 21 || back.Arms[0].Retention.MaxPerResource != 100 {
		t.Fatalf("soak.json: %+v", back)
	}
	if s := back.Arms[0].Samples[0]; s["storeReceipts"] != nil || s["storeBytes"] != nil || s["rssFileKiB"] != float64(4096) {
		t.Errorf("first sample %v: want receipts and store bytes null (NaN), rssFileKiB 4096", s)
	}
	if s := back.Arms[1].Samples[2]; s["storeReceipts"] != float64(12345) || s["storeBytes"] != float64(3<<20) {
		t.Errorf("sample %v: want receipts 12345, store bytes 3 MiB", s)
	}
	if back.Arms[0].Summary["rssPass"] != true || back.Arms[1].Summary["rssPass"] != false {
		t.Errorf("summaries %v / %v", back.Arms[0].Summary, back.Arms[1].Summary)
	}
	for _, name := range []string{"SOAK.md", "soak.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFencegateArmsOrder(t *testing.T) {
	var names []string
	for _, f := range fencegateArms() {
		names = append(names, f.name())
	}
	want := "fg-memory-registry-EdDSA fg-memory-proof-EdDSA fg-bolt-registry-EdDSA fg-bolt-proof-EdDSA " +
		"fg-redis-registry-EdDSA fg-redis-proof-EdDSA fg-postgres-registry-EdDSA fg-postgres-proof-EdDSA fg-bolt-registry-ES256 fg-bolt-registry-HS256"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("arms %s, want %s", got, want)
	}
}
