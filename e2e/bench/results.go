package main

import (
	"encoding/json"
	"fmt"
	"math"
)

// runRecord is one run of one arm under one load, in one repetition.
type runRecord struct {
	Rep        int            `json:"rep"`
	Load       string         `json:"load"`
	Arm        string         `json:"arm"`
	Workers    int            `json:"workers"`
	TargetRate float64        `json:"targetRate,omitempty"`
	Requests   int            `json:"requests"`
	Seconds    float64        `json:"seconds"`
	RPS        float64        `json:"rps"`
	Latency    latencySummary `json:"latency"`
	Non2xx     int            `json:"non2xx"`
	Errors     int            `json:"errors"`
	Missed     int            `json:"missed"`
	Answered   int            `json:"answeredWithWarmup"`
	FirstError string         `json:"firstError,omitempty"`
	// CPU is core-seconds per 1,000 requests, by process role: proxy,
	// registry, redis, backend, loadgen.
	CPU            map[string]float64 `json:"cpuCoreSecondsPer1k"`
	ProxyRSSStart  int64              `json:"proxyRssStartKiB,omitempty"`
	ProxyRSSEnd    int64              `json:"proxyRssEndKiB,omitempty"`
	ProxyPeakRSS   int64              `json:"proxyPeakRssKiB,omitempty"`
	LoadgenSeconds float64            `json:"loadgenCpuSeconds"`
}

// valid: every answer 2xx, nothing lost, the open loop's schedule kept.
func (r runRecord) valid() bool {
	return r.Non2xx == 0 && r.Errors == 0 && r.Requests > 0 && !r.behind()
}

// behind: the open loop's backlog at the end exceeds 1% of what its
// window scheduled: the arm did not keep the rate.
func (r runRecord) behind() bool {
	return r.Missed > 0 && float64(r.Missed) > 0.01*r.TargetRate*r.Seconds
}

// armRow is the table row of one arm under one load: every quantity as
// the median of the repetitions with its range.
type armRow struct {
	Load string `json:"load"`
	Arm  string `json:"arm"`
	// Rate is the open loop's target rate (the same in every repetition).
	Rate  float64 `json:"targetRate,omitempty"`
	RPS   spread  `json:"rps"`
	Ratio spread  `json:"rpsRatioToPlainProxy"`
	P50   spread  `json:"p50Ms"`
	P99   spread  `json:"p99Ms"`
	P999  spread  `json:"p999Ms"`
	// Added* are the arm's percentiles minus the direct arm's, per
	// repetition.
	AddP50     spread            `json:"addedP50Ms"`
	AddP99     spread            `json:"addedP99Ms"`
	AddP999    spread            `json:"addedP999Ms"`
	CPU        map[string]spread `json:"cpuCoreSecondsPer1k"`
	PeakRSSMiB float64           `json:"proxyPeakRssMiB"`
	Non2xx     int               `json:"non2xx"`
	Errors     int               `json:"errors"`
	Missed     int               `json:"missed"`
	Invalid    int               `json:"invalidRuns"`
	Behind     int               `json:"rateNotKeptRuns"`
	Rejected   int               `json:"runsWithNon2xxOrErrors"`
	Runs       int               `json:"runs"`
}

// buildRows summarizes runs into one row per (load, arm), in the order
// loads and arms were first run.
func buildRows(runs []runRecord) []armRow {
	type key struct{ load, arm string }
	type repKey struct {
		load, arm string
		rep       int
	}
	byRep := map[repKey]runRecord{}
	var order []key
	seen := map[key]bool{}
	for _, r := range runs {
		byRep[repKey{r.Load, r.Arm, r.Rep}] = r
		k := key{r.Load, r.Arm}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	var rows []armRow
	for _, k := range order {
		var rps, ratio, p50, p99, p999, a50, a99, a999 []float64
		cpu := map[string][]float64{}
		row := armRow{Load: k.load, Arm: k.arm, CPU: map[string]spread{}}
		for _, r := range runs {
			if r.Load != k.load || r.Arm != k.arm {
				continue
			}
			row.Runs++
			row.Rate = r.TargetRate
			row.Non2xx += r.Non2xx
			row.Errors += r.Errors
			row.Missed += r.Missed
			if !r.valid() {
				row.Invalid++
			}
			if r.behind() {
				row.Behind++
			}
			if r.Non2xx+r.Errors > 0 {
				row.Rejected++
			}
			rps = append(rps, r.RPS)
			p50 = append(p50, r.Latency.P50)
			p99 = append(p99, r.Latency.P99)
			p999 = append(p999, r.Latency.P999)
			if d, ok := byRep[repKey{r.Load, "direct", r.Rep}]; ok {
				a50 = append(a50, r.Latency.P50-d.Latency.P50)
				a99 = append(a99, r.Latency.P99-d.Latency.P99)
				a999 = append(a999, r.Latency.P999-d.Latency.P999)
			}
			if p, ok := byRep[repKey{r.Load, "plain-proxy", r.Rep}]; ok && p.RPS > 0 {
				ratio = append(ratio, r.RPS/p.RPS)
			}
			for role, v := range r.CPU {
				cpu[role] = append(cpu[role], v)
			}
			if mib := float64(r.ProxyPeakRSS) / 1024; mib > row.PeakRSSMiB {
				row.PeakRSSMiB = mib
			}
		}
		row.RPS, row.Ratio = spreadOf(rps), spreadOf(ratio)
		row.P50, row.P99, row.P999 = spreadOf(p50), spreadOf(p99), spreadOf(p999)
		row.AddP50, row.AddP99, row.AddP999 = spreadOf(a50), spreadOf(a99), spreadOf(a999)
		for role, vs := range cpu {
			row.CPU[role] = spreadOf(vs)
		}
		rows = append(rows, row)
	}
	return rows
}

// loadName labels a load in tables and JSON.
func loadName(spec loadSpec) string {
	if spec.Label != "" {
		return spec.Label
	}
	if spec.Mode == "open" {
		return fmt.Sprintf("open-%d@%.0f/s", spec.Workers, spec.Rate)
	}
	return fmt.Sprintf("closed-%d", spec.Workers)
}

// memoryRow is a proxy's memory over the whole benchmark. Growth is taken
// from the first measured window's start to the last one's end, over
// every request answered in between (warm-ups included), so that the
// heap's first growth to its working size is spread over many requests
// instead of being extrapolated from one short window.
type memoryRow struct {
	Arm        string  `json:"arm"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	FirstMiB   float64 `json:"firstRssMiB"`
	LastMiB    float64 `json:"lastRssMiB"`
	Answered   int     `json:"answered"`
	GrowthMiB  float64 `json:"growthMiBPer100k"`
}

// buildMemory is one memoryRow per arm with a proxy, in first-run order;
// runs whose proxy could not be read (it had exited) are left out.
func buildMemory(runs []runRecord) []memoryRow {
	var rows []memoryRow
	idx := map[string]int{}
	first := map[string]bool{}
	for _, r := range runs {
		if r.ProxyRSSStart == 0 || r.ProxyRSSEnd == 0 {
			continue
		}
		i, ok := idx[r.Arm]
		if !ok {
			i = len(rows)
			idx[r.Arm] = i
			rows = append(rows, memoryRow{Arm: r.Arm, FirstMiB: float64(r.ProxyRSSStart) / 1024})
			first[r.Arm] = true
		}
		m := &rows[i]
		m.LastMiB = float64(r.ProxyRSSEnd) / 1024
		m.PeakRSSMiB = math.Max(m.PeakRSSMiB, float64(r.ProxyPeakRSS)/1024)
		if first[r.Arm] {
			// The first run's warm-up came before the first reading.
			m.Answered += r.Requests
			first[r.Arm] = false
		} else {
			m.Answered += r.Answered
		}
	}
	for i := range rows {
		m := &rows[i]
		m.GrowthMiB = math.NaN()
		if m.Answered > 0 {
			m.GrowthMiB = (m.LastMiB - m.FirstMiB) / float64(m.Answered) * 1e5
		}
	}
	return rows
}

// MarshalJSON writes NaN (no requests) as null.
func (m memoryRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"arm": m.Arm, "peakRssMiB": m.PeakRSSMiB, "firstRssMiB": m.FirstMiB,
		"lastRssMiB": m.LastMiB, "answered": m.Answered, "growthMiBPer100k": jsonNum(m.GrowthMiB)})
}
