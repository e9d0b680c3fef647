package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestJudgeStall(t *testing.T) {
	tg := defaultSoakTarget
	flat := func(int) float64 { return 4 }
	for _, c := range []struct {
		name    string
		windows []soakWindow
		seconds float64
		pass    bool
		worst   float64
		worstAt float64
		n       int
	}{
		{"flat", soakWindows(60, flat), 600, true, 4, 0, 60},
		// One window at exactly twice the median: within.
		{"at 2x", soakWindows(60, func(i int) float64 { return map[bool]float64{true: 8, false: 4}[i == 30] }), 600, true, 8, 300, 60},
		// A compaction pass that puts 1.5 s into one window's p99.
		{"stall", soakWindows(60, func(i int) float64 { return map[bool]float64{true: 1500, false: 4}[i == 6] }), 600, false, 1500, 60, 60},
		{"just over 2x", soakWindows(60, func(i int) float64 { return map[bool]float64{true: 8.01, false: 4}[i == 59] }), 600, false, 8.01, 590, 60},
		// Windows after the soak's end (its stragglers) are not judged.
		{"straggler", soakWindows(61, func(i int) float64 { return map[bool]float64{true: 900, false: 4}[i == 60] }), 600.4, true, 4, 0, 60},
		{"one window", soakWindows(1, flat), 10, false, 4, 0, 1},
		{"none", nil, 600, false, math.NaN(), math.NaN(), 0},
	} {
		v := judgeStall(c.windows, c.seconds, tg)
		if v.Pass != c.pass || v.Windows != c.n || !sameFloat(v.Worst, c.worst) || !sameFloat(v.WorstAt, c.worstAt) {
			t.Errorf("%s: %+v, want pass %v, %d windows, worst %v at %v", c.name, v, c.pass, c.n, c.worst, c.worstAt)
		}
	}
	// A window in which no request ended is the worst stall there is.
	ws := soakWindows(60, flat)
	ws[10].Requests, ws[10].P99 = 0, math.NaN()
	if v := judgeStall(ws, 600, tg); v.Pass || v.Empty != 1 || !math.IsInf(v.Worst, 1) || v.WorstAt != 100 || v.Median != 4 {
		t.Errorf("empty window: %+v", v)
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestIntervalRecorderWindows(t *testing.T) {
	start := time.Unix(1000, 0)
	r := newIntervalRecorder(start, 10*time.Second)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	for i := range 100 {
		r.observe(at(float64(i)/10), time.Duration(i+1)*time.Millisecond, 200, nil) // window 0: 1..100 ms
	}
	r.observe(at(12), 5*time.Millisecond, 409, nil)
	r.observe(at(13), time.Millisecond, 0, errTestRefused)
	// Nothing ends in [20 s, 30 s); one request at 31 s.
	r.observe(at(31), 7*time.Millisecond, 200, nil)
	// A request observed just after a later one counts in the current window.
	r.observe(at(29.9), 2*time.Millisecond, 200, nil)
	got := r.windowsUntil(at(35))
	if len(got) != 3 {
		t.Fatalf("windows %+v, want 3 closed", got)
	}
	if w := got[0]; w.Start != 0 || w.Requests != 100 || w.Bad != 0 || w.P99 != 99 || w.P50 != 50 {
		t.Errorf("window 0 = %+v, want 100 requests, p50 50, p99 99", w)
	}
	if w := got[1]; w.Start != 10 || w.Requests != 2 || w.Bad != 2 || w.P99 != 5 {
		t.Errorf("window 1 = %+v, want 2 requests, both bad, p99 5 (the error has no latency)", w)
	}
	if w := got[2]; w.Start != 20 || w.Requests != 0 || !math.IsNaN(w.P99) {
		t.Errorf("window 2 = %+v, want empty", w)
	}
	// The sample interval is kept apart from the windows.
	if req, total, bad, lat := r.take(); req != 104 || total != 104 || bad != 2 || len(lat) != 103 {
		t.Errorf("take = %d, %d, %d, %d latencies", req, total, bad, len(lat))
	}
	if got := r.windowsUntil(at(41)); len(got) != 4 || got[3].Requests != 2 || got[3].P99 != 7 {
		t.Errorf("window 3 = %+v, want the 31 s and the late 29.9 s requests", got)
	}
}

var errTestRefused = &testError{"refused"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

func TestSummarizeSoakAnonAndStall(t *testing.T) {
	flat := soakSamples(func(int) float64 { return 0 })
	s := summarizeSoak(flat, soakWindows(60, func(int) float64 { return 4 }), 1000, 0, defaultSoakTarget)
	// soakSamples' anon is RSS - 4 MiB: 26 MiB at the plateau.
	if s.AnonPeak != 26 || !s.AnonFlat || !s.AnonPass || !s.Stall.Pass || s.Stall.Windows != 60 {
		t.Errorf("flat: anon peak %v flat %v pass %v, stall %+v", s.AnonPeak, s.AnonFlat, s.AnonPass, s.Stall)
	}
	// Anon above 40 MB (38.15 MiB) in one sample, flat otherwise.
	high := soakSamples(func(int) float64 { return 0 })
	high[12].RSS.Anon = 39065 // KiB: 38.15 MiB, just above 40 x 10^6 bytes
	if s := summarizeSoak(high, nil, 1000, 0, defaultSoakTarget); s.AnonPass || s.AnonPeak != 39065.0/1024 {
		t.Errorf("anon peak 39065 KiB: pass %v peak %v", s.AnonPass, s.AnonPeak)
	}
	at := soakSamples(func(int) float64 { return 0 })
	at[12].RSS.Anon = 39062 // KiB: 39,999,488 bytes, just within
	if s := summarizeSoak(at, nil, 1000, 0, defaultSoakTarget); !s.AnonPass {
		t.Errorf("anon peak 39062 KiB: want PASS (%v)", s.AnonPeak)
	}
	// Anon growing 1 MiB/min over the second half: not flat.
	leak := soakSamples(func(i int) float64 { return 0.5 * float64(max(i-10, 0)) })
	if s := summarizeSoak(leak, nil, 1000, 0, defaultSoakTarget); s.AnonFlat || s.AnonPass {
		t.Errorf("anon leak: flat %v pass %v slope %v", s.AnonFlat, s.AnonPass, s.AnonSlope)
	}
	// An invalid run passes neither, whatever its windows.
	bad := soakSamples(func(int) float64 { return 0 })
	bad[3].Bad = 1
	if s := summarizeSoak(bad, soakWindows(60, func(int) float64 { return 4 }), 1000, 0, defaultSoakTarget); s.AnonPass || s.Stall.Pass {
		t.Errorf("invalid run: anon %v stall %v", s.AnonPass, s.Stall.Pass)
	}
}

func TestEvaluateSoakTargets(t *testing.T) {
	tg := defaultSoakTarget
	mk := func(armName string, seconds int, windows []soakWindow, mutate func([]soakSample)) *soakRun {
		sm := soakSamples(func(int) float64 { return 0 })[:seconds/30+1]
		if mutate != nil {
			mutate(sm)
		}
		r := &soakRun{Arm: armName, Rate: 1000, Samples: sm, Windows: windows}
		r.Summary = summarizeSoak(r.Samples, r.Windows, r.Rate, 0, tg)
		return r
	}
	stalled := soakWindows(60, func(i int) float64 { return map[bool]float64{true: 1800, false: 4}[i%6 == 5] })
	runs := []*soakRun{
		mk(armBoltProof, 600, stalled, nil),
		// Short: shown with its figure, "not measured" (not the target's run).
		mk(armRedisProof, 120, soakWindows(12, func(int) float64 { return 4 }), func(s []soakSample) {
			for i := range s {
				s[i].RSS = rssKB{RSS: 30 << 10, Anon: 26 << 10, File: 4 << 10, HWM: 30 << 10}
			}
		}),
		// The registry-mode twin, invalid: shown beside the judged one.
		mk(armBoltRegistry, 600, soakWindows(60, func(int) float64 { return 4 }), func(s []soakSample) { s[4].Bad = 3 }),
		// A window in which nothing ended: a stall, MISS with that reason.
		mk(armRedisRegistry, 600, func() []soakWindow {
			ws := soakWindows(60, func(int) float64 { return 4 })
			ws[33].Requests, ws[33].P99 = 0, math.NaN()
			return ws
		}(), nil),
	}
	got := verdicts(evaluateSoakTargets(issue22Targets(), runs, tg))
	for _, c := range []struct {
		key, verdict, why string
		median            float64
		judged            bool
	}{
		{"soak-rss-bolt " + armBoltProof, verdictPass, "peak RssAnon", 26, true},
		{"soak-stall-bolt " + armBoltProof, verdictMiss, "worst 10s window's p99 1800.00 ms (at 50 s) over the median window's 4.00 ms, 60 windows", 450, true},
		{"soak-rss-redis " + armRedisProof, verdictNone, "ran 120 s, not 600 s: not the target's run", 26, true},
		{"soak-stall-redis " + armRedisProof, verdictNone, "ran 120 s, not 600 s", 1, true},
		{"soak-rss-bolt " + armBoltRegistry, verdictMiss, "invalid run (3 non-2xx or errors)", 26, false},
		{"soak-stall-bolt " + armBoltRegistry, verdictMiss, "invalid run", 1, false},
		{"soak-stall-redis " + armRedisRegistry, verdictMiss, "1 windows with no request ended (a stall)", math.Inf(1), false},
	} {
		r, ok := got[c.key]
		if !ok {
			t.Errorf("%s: no result", c.key)
			continue
		}
		if r.Verdict != c.verdict || !strings.Contains(r.Why, c.why) || r.Judged != c.judged || !(r.Measured.Median == c.median || math.Abs(r.Measured.Median-c.median) < 1e-9) {
			t.Errorf("%s: %s %v (%s) judged %v; want %s %v (%s) judged %v", c.key, r.Verdict, r.Measured.Median, r.Why, r.Judged, c.verdict, c.median, c.why, c.judged)
		}
	}
	if len(got) != 8 {
		t.Errorf("%d results, want 8: %v", len(got), got)
	}
	// Nothing soaked: every judged arm "not measured", none PASS.
	for _, r := range evaluateSoakTargets(issue22Targets(), nil, tg) {
		if r.Verdict != verdictNone || !strings.Contains(r.Why, "not soaked") {
			t.Errorf("no soak: %s %s: %s (%s)", r.ID, r.Arm, r.Verdict, r.Why)
		}
	}
}
