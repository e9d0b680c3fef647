package main

import (
	"fmt"
	"math"
	"strings"
)

// Issue 22's soak targets (the kindSoak specs of issue22Targets), judged
// from a soak's runs: SOAK.md's Targets table and soak.json's "targets".
// Like targets.go these are pure functions over what was measured. A soak
// shorter than the target's 10 minutes, or at another rate, is shown with
// its figure but "not measured": it is not the run the target asks for.

// Soak target units.
const (
	unitAnonMiB  = "MiB anon"
	unitStallRat = "× median window p99"
)

// evaluateSoakTargets judges every soak spec on its judged arm and shows
// every other soaked arm of the same store beside it.
func evaluateSoakTargets(specs []targetSpec, runs []*soakRun, t soakTarget) []targetResult {
	var out []targetResult
	for _, sp := range specs {
		if sp.Kind != kindSoak {
			continue
		}
		out = append(out, soakTarget1(sp, sp.Judged, true, runs, t))
		for _, r := range runs {
			if r.Arm != sp.Judged && storeOf(r.Arm) == storeOf(sp.Judged) {
				out = append(out, soakTarget1(sp, r.Arm, false, runs, t))
			}
		}
	}
	return out
}

// storeOf is the store of a fencegate arm's name (fg-STORE-STATUS-ALG).
func storeOf(armName string) string {
	f := strings.Split(armName, "-")
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// isStallSpec tells the no-stall specs from the RSS ones.
func isStallSpec(sp targetSpec) bool { return strings.HasPrefix(sp.ID, "soak-stall") }

// soakTarget1 judges spec sp on the soak of armName.
func soakTarget1(sp targetSpec, armName string, judged bool, runs []*soakRun, t soakTarget) targetResult {
	res := targetResult{ID: sp.ID, Target: sp.Text, Arm: armName, Load: soakLoad, Judged: judged, Op: atMost}
	stall := isStallSpec(sp)
	if stall {
		res.Threshold, res.Unit = t.StallFactor, unitStallRat
	} else {
		res.Threshold, res.Unit = t.rssMiB(), unitAnonMiB
	}
	var run *soakRun
	for _, r := range runs {
		if r.Arm == armName {
			run = r
		}
	}
	if run == nil {
		res.Measured, res.Verdict, res.Why = spreadOf(nil), verdictNone, "not soaked (-soak-arms)"
		return res
	}
	m := soakMeasure(run, stall, t)
	res.Measured, res.Why = m.value, m.why
	switch {
	case m.none:
		res.Verdict = verdictNone
	case m.miss:
		res.Verdict = verdictMiss
	default:
		res.Verdict = judge(atMost, m.value.Median, res.Threshold)
	}
	return res
}

// soakMeasure is the figure of one soak target on run: the peak
// anonymous RSS, or the worst window's p99 over the median window's.
func soakMeasure(run *soakRun, stall bool, t soakTarget) measurement {
	s := run.Summary
	var m measurement
	if stall {
		st := s.Stall
		ratio := math.NaN()
		if st.Median > 0 {
			ratio = st.Worst / st.Median
		}
		m.value = single(ratio)
		m.why = fmt.Sprintf("worst %gs window's p99 %s ms (at %s s) over the median window's %s ms, %d windows",
			t.WindowSeconds, fmtNum(st.Worst, 2), fmtNum(st.WorstAt, 0), fmtNum(st.Median, 2), st.Windows)
		switch {
		case st.Empty > 0:
			m.miss, m.why = true, fmt.Sprintf("%d windows with no request ended (a stall); ", st.Empty)+m.why
		case st.Windows < 2:
			m.none, m.why = true, fmt.Sprintf("%d full window(s): at least 2 needed", st.Windows)
		}
	} else {
		m.value = single(s.AnonPeak)
		if s.AnonPeak == 0 {
			m.value = spreadOf(nil)
		}
		m.why = fmt.Sprintf("peak RssAnon; slope %s MiB/min over the last half (flat: <= %g)", fmtNum(s.AnonSlope, 3), t.FlatMiBPerMin)
		if !s.AnonFlat {
			m.miss, m.why = true, "not flat: "+m.why
		}
	}
	if !s.Valid {
		m.miss, m.why = true, "invalid run ("+strings.Join(soakInvalidWhy(run), ", ")+"); "+m.why
	}
	var c []string
	if s.Seconds < t.Seconds {
		c = append(c, fmt.Sprintf("ran %.0f s, not %.0f s", s.Seconds, t.Seconds))
	}
	if run.Rate != t.Rate {
		c = append(c, fmt.Sprintf("at %g/s, not %g/s", run.Rate, t.Rate))
	}
	if len(c) > 0 && !m.miss {
		m.none, m.why = true, strings.Join(c, "; ")+": not the target's run; "+m.why
	}
	return m
}

// soakInvalidWhy says why a soak run is invalid.
func soakInvalidWhy(r *soakRun) []string {
	s := r.Summary
	var why []string
	if s.Requests == 0 {
		why = append(why, "no requests")
	}
	if s.Bad > 0 {
		why = append(why, fmt.Sprintf("%d non-2xx or errors", s.Bad))
	}
	if !s.RateKept {
		why = append(why, fmt.Sprintf("rate not kept (%d missed)", r.Missed))
	}
	if s.AllRSSKnown < len(r.Samples) {
		why = append(why, "proxy memory unreadable (did it exit?)")
	}
	return why
}
