package main

import (
	"strings"
	"testing"
)

// openRuns are closed-64 runs of six arms, each with its own rates, plus
// closed-16 and open runs of the same arms at other rates that must not
// count.
func openRuns() []runRecord {
	mk := func(rep int, load, arm string, rps float64, non2xx int) runRecord {
		return runRecord{Rep: rep, Load: load, Arm: arm, Workers: 64, Requests: int(rps), Seconds: 1, RPS: rps, Non2xx: non2xx}
	}
	var runs []runRecord
	for rep, v := range [][6]float64{{30000, 10000, 3000, 1500, 900, 900}, {28000, 11000, 1000, 1700, 950, 1100}, {32000, 9000, 2500, 1600, 800, 850}} {
		for i, arm := range []string{"direct", "plain-proxy", "fg-a", "fg-b", "fg-c", "fg-d"} {
			non2xx := 0
			if arm == "fg-c" {
				non2xx = 1 // every closed-64 run of fg-c is invalid
			}
			runs = append(runs, mk(rep+1, "closed-64", arm, v[i], non2xx))
			runs = append(runs, mk(rep+1, "closed-16", arm, 4*v[i]+7, 0))
			runs = append(runs, mk(rep+1, "open-64@5000/s", arm, 5000, 0))
		}
	}
	return runs
}

func TestPlanOpenUsesEachArmsOwnClosed64Median(t *testing.T) {
	plans := planOpen(openRuns(), []string{"direct", "plain-proxy", "fg-a", "fg-b", "fg-c", "fg-d", "fg-none"})
	want := []openPlan{
		{Arm: "direct", MaxRPS: 30000, OwnRate: 15000, FixedRate: 1000},
		{Arm: "plain-proxy", MaxRPS: 10000, OwnRate: 5000, FixedRate: 1000},
		{Arm: "fg-a", MaxRPS: 2500, OwnRate: 1250, FixedRate: 1000},
		// 1,600 rps closed-loop: at least the rate, so it runs at 1,000/s
		// (below twice the rate: the old rule left it out).
		{Arm: "fg-b", MaxRPS: 1600, OwnRate: 800, FixedRate: 1000},
		// Only invalid closed-64 runs: no maximum, no phase.
		{Arm: "fg-c", OwnSkip: skipNoMax, FixedSkip: skipNoMax},
		// 900 rps closed-loop (one run at 1,100): below the rate, even
		// though its closed-16 runs (3,607/s) are not.
		{Arm: "fg-d", MaxRPS: 900, OwnRate: 450, FixedSkip: skipBelowRate},
		{Arm: "fg-none", OwnSkip: skipNoMax, FixedSkip: skipNoMax},
	}
	if len(plans) != len(want) {
		t.Fatalf("%d plans, want %d: %+v", len(plans), len(want), plans)
	}
	for i := range want {
		if plans[i] != want[i] {
			t.Errorf("plan %d = %+v, want %+v", i, plans[i], want[i])
		}
	}
	// The specs carry the plan's rates under their own labels.
	specs := openSpecs(options{}, plans[2])
	if loadName(specs[0]) != openOwnLoad || specs[0].Rate != 1250 || loadName(specs[1]) != openFixedLoad || specs[1].Rate != 1000 {
		t.Errorf("fg-a specs = %+v", specs)
	}
	if s := openSpecs(options{}, plans[5]); s[1].Rate != 0 || s[0].Workers != 64 || s[0].Mode != "open" {
		t.Errorf("fg-d specs = %+v", s)
	}
}

// openReport is a report whose open-own and open-1k runs follow the plan
// of openRuns, two repetitions each.
func openReport() *report {
	rep := sampleReport()
	arms := []string{"direct", "plain-proxy", "fg-a", "fg-b", "fg-c", "fg-d"}
	rep.OpenPlan = planOpen(openRuns(), arms)
	for r := 1; r <= 2; r++ {
		for i, pl := range rep.OpenPlan {
			for _, spec := range openSpecs(rep.Options, pl) {
				if spec.Rate == 0 {
					continue
				}
				lat := latencySummary{P50: float64(i+1) + 0.5*float64(r), P99: 10*float64(i+1) + float64(r), P999: 20 * float64(i+1)}
				if spec.Label == openFixedLoad {
					lat.P99 += 100
				}
				rep.Runs = append(rep.Runs, runRecord{Rep: r, Load: loadName(spec), Arm: pl.Arm, Workers: 64, TargetRate: spec.Rate,
					Requests: int(spec.Rate) * 2, Seconds: 2, RPS: spec.Rate, Latency: lat, CPU: map[string]float64{"proxy": 0.25}})
			}
		}
	}
	rep.Rows = buildRows(rep.Runs)
	return rep
}

func TestRenderOpenTables(t *testing.T) {
	md := renderMarkdown(openReport())
	own := strings.Index(md, "### open-own: each arm at half its own maximum")
	fixed := strings.Index(md, "### open-1k: every arm at 1000 requests/s")
	if own < 0 || fixed < own {
		t.Fatalf("RESULTS.md lacks the open-own and open-1k tables in order:\n%s", md)
	}
	ownTable, fixedTable := md[own:fixed], md[fixed:]
	for _, want := range []string{
		// arm | closed-64 rps | rate | rps | p50 | p99 | p99.9 | proxy ...
		"| direct | 30000 | 15000 | 15000 | 1.75 (1.50–2.00) | 11.50 (11.00–12.00) | 20.00 | 0.250 |",
		"| plain-proxy | 10000 | 5000 | 5000 | 2.75 (2.50–3.00) |",
		"| fg-a | 2500 | 1250 | 1250 | 3.75 (3.50–4.00) | 31.50 (31.00–32.00) | 60.00 | 0.250 |",
		"| fg-b | 1600 | 800 | 800 |",
		"| fg-c | – | – | – | – | – | – | – | – | – | – | – | – | " + skipNoMax + " |",
	} {
		if !strings.Contains(ownTable, want) {
			t.Errorf("open-own table lacks %q:\n%s", want, ownTable)
		}
	}
	for _, want := range []string{
		// Added over direct at the same rate: fg-a p99 (131+r) - direct's (111+r) = 20.
		"| fg-a | 2500 | 1000 | 1000 | 2.00 | 20.00 | 40.00 | 131.50 (131.00–132.00) | 0.250 |",
		"| direct | 30000 | 1000 | 1000 | 0.00 | 0.00 | 0.00 |",
		"| fg-b | 1600 | 1000 | 1000 |",
		"| fg-d | 900 | – | – | – | – | – | – | – | – | – | – | – | " + skipBelowRate + " |",
		"| fg-c | – | – |",
		"Direct at 1000/s (absolute): p50 1.75 (1.50–2.00) ms, p99 111.50 (111.00–112.00) ms",
	} {
		if !strings.Contains(fixedTable, want) {
			t.Errorf("open-1k table lacks %q:\n%s", want, fixedTable)
		}
	}
	// The generic per-load tables do not repeat them.
	if strings.Contains(md, "### open-own\n") || strings.Contains(md, "### open-1k\n") {
		t.Error("open-own or open-1k also rendered as a generic load table")
	}
	// The plot leaves open-own out (its arms run at different rates) and keeps open-1k.
	svg := renderSVG(svgRows(openReport().Rows))
	if strings.Contains(svg, openOwnLoad) || !strings.Contains(svg, openFixedLoad) {
		t.Error("latency.svg: want open-1k and not open-own")
	}
}
