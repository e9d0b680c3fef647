package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
)

// The open loop at half the plain proxy's rate is more than any sidecar
// arm keeps, so its sidecar rows say "rate not kept" and give no latency.
// Two more open-loop phases run after every closed-loop repetition, so
// that an arm's maximum is the median of all its closed-64 runs:
// open-own, every arm at half its own maximum, and open-1k, every arm
// whose closed-64 maximum is at least 1,000 requests/s at 1,000/s (the
// figure to compare with other sidecars: added p99 at 1k rps). An arm whose maximum is barely
// above the rate may not keep it: its row then says "rate not kept" and
// its targets are a MISS with that reason (targets.go).
const (
	openOwnLoad   = "open-own"
	openFixedLoad = "open-1k"
	openFixedRate = 1000.0
	openWorkers   = 64
	// openMaxLoad is the closed loop whose median rps is an arm's maximum.
	openMaxLoad = "closed-64"
)

// Reasons an arm is left out of a phase, shown in its table row.
const (
	skipNoMax     = "not run: no valid closed-64 run"
	skipBelowRate = "not run: rate not kept (closed-64 max below the rate)"
)

// openPlan is one arm's rates in the open-own and open-1k phases; a zero
// rate means the phase does not run the arm and Skip says why.
type openPlan struct {
	Arm       string  `json:"arm"`
	MaxRPS    float64 `json:"closed64MedianRps"`
	OwnRate   float64 `json:"ownRate"`
	OwnSkip   string  `json:"ownNotRun,omitempty"`
	FixedRate float64 `json:"fixedRate"`
	FixedSkip string  `json:"fixedNotRun,omitempty"`
}

// planOpen picks each arm's open-loop rates from its own valid closed-64
// runs (invalid runs say nothing about what the arm keeps), in the order
// of arms.
func planOpen(runs []runRecord, arms []string) []openPlan {
	plans := make([]openPlan, 0, len(arms))
	for _, name := range arms {
		var rps []float64
		for _, r := range runs {
			if r.Arm == name && r.Load == openMaxLoad && r.valid() {
				rps = append(rps, r.RPS)
			}
		}
		p := openPlan{Arm: name}
		if m := spreadOf(rps).Median; !math.IsNaN(m) {
			p.MaxRPS = m
		}
		p.OwnRate = math.Round(p.MaxRPS / 2)
		if p.OwnRate < 1 {
			p.OwnRate, p.OwnSkip = 0, skipNoMax
		}
		switch {
		case p.MaxRPS == 0:
			p.FixedSkip = skipNoMax
		case p.MaxRPS < openFixedRate:
			p.FixedSkip = skipBelowRate
		default:
			p.FixedRate = openFixedRate
		}
		plans = append(plans, p)
	}
	return plans
}

// openSpecs are the two phases' loads for arm plan p; a zero Rate skips it.
func openSpecs(o options, p openPlan) []loadSpec {
	return []loadSpec{
		{Mode: "open", Label: openOwnLoad, Workers: openWorkers, Rate: p.OwnRate, Warmup: o.Warmup, Duration: o.Duration},
		{Mode: "open", Label: openFixedLoad, Workers: openWorkers, Rate: p.FixedRate, Warmup: o.Warmup, Duration: o.Duration},
	}
}

// runOpenPhases runs open-own and open-1k on every planned arm,
// round-robin, o.Reps times, each repetition under fresh leases.
func (s *stack) runOpenPhases(ctx context.Context, o options, arms []*arm, base http.RoundTripper, rep *report, progress io.Writer) error {
	names := make([]string, len(arms))
	for i, a := range arms {
		names[i] = a.Name
	}
	rep.OpenPlan = planOpen(rep.Runs, names)
	for _, p := range rep.OpenPlan {
		fmt.Fprintf(progress, "bench: %-24s closed-64 median %6.0f rps: open-own at %.0f/s, open-1k %s\n",
			p.Arm, p.MaxRPS, p.OwnRate, map[bool]string{true: "at 1000/s", false: p.FixedSkip}[p.FixedRate > 0])
	}
	for r := 1; r <= o.Reps; r++ {
		for _, a := range arms {
			if err := a.acquire(ctx, openWorkers, base); err != nil {
				return err
			}
		}
		for phase := range 2 {
			for i := range arms {
				ai := (i + r - 1) % len(arms)
				spec := openSpecs(o, rep.OpenPlan[ai])[phase]
				if spec.Rate == 0 {
					continue
				}
				if err := s.runOne(ctx, o, arms[ai], spec, r, rep, progress); err != nil {
					return err
				}
			}
		}
		for _, a := range arms {
			a.release(ctx)
		}
	}
	return nil
}
