package main

import (
	"encoding/json"
	"math"
	"slices"
)

// percentile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank rule: the smallest sample with at least q of the samples at
// or below it. Every sample is kept (no buckets), so p99.9 of a few
// thousand requests is a real request's latency. NaN for no samples.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 || q <= 0 || q > 1 || math.IsNaN(q) {
		return math.NaN()
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// spread is a quantity measured once per repetition: the median of the
// repetitions with their minimum and maximum.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// spreadOf summarizes vs, skipping NaNs (a quantity a repetition could not
// give). The median of an even count is the mean of the middle two.
func spreadOf(vs []float64) spread {
	xs := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return spread{Median: med, Min: xs[0], Max: xs[n-1], N: n}
}

// latencySummary is the percentiles of one run, in milliseconds.
type latencySummary struct {
	P50  float64 `json:"p50Ms"`
	P99  float64 `json:"p99Ms"`
	P999 float64 `json:"p999Ms"`
	Max  float64 `json:"maxMs"`
	Mean float64 `json:"meanMs"`
}

// summarize sorts samples (nanoseconds) in place and returns their
// percentiles in milliseconds.
func summarize(samples []int64) latencySummary {
	if len(samples) == 0 {
		n := math.NaN()
		return latencySummary{n, n, n, n, n}
	}
	slices.Sort(samples)
	ms := make([]float64, len(samples))
	var sum float64
	for i, s := range samples {
		ms[i] = float64(s) / 1e6
		sum += ms[i]
	}
	return latencySummary{
		P50: percentile(ms, 0.50), P99: percentile(ms, 0.99), P999: percentile(ms, 0.999),
		Max: ms[len(ms)-1], Mean: sum / float64(len(ms)),
	}
}

// jsonNum is v for JSON: null when NaN or infinite, which encoding/json
// refuses.
func jsonNum(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// MarshalJSON writes NaN (no value) as null.
func (s spread) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"median": jsonNum(s.Median), "min": jsonNum(s.Min), "max": jsonNum(s.Max), "n": s.N})
}

// MarshalJSON writes NaN (no samples) as null.
func (l latencySummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"p50Ms": jsonNum(l.P50), "p99Ms": jsonNum(l.P99), "p999Ms": jsonNum(l.P999),
		"maxMs": jsonNum(l.Max), "meanMs": jsonNum(l.Mean)})
}
