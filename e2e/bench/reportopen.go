package main

// svgRows are the rows the plot draws: open-own is left out, since its
// arms run at different rates and its latency added over the direct arm
// (at the direct arm's own, much higher rate) compares nothing.
func svgRows(rows []armRow) []armRow {
	var out []armRow
	for _, r := range rows {
		if r.Load != openOwnLoad {
			out = append(out, r)
		}
	}
	return out
}

// findRow is the row of arm under load, or nil.
func findRow(rows []armRow, load, arm string) *armRow {
	for i := range rows {
		if rows[i].Load == load && rows[i].Arm == arm {
			return &rows[i]
		}
	}
	return nil
}

// renderOpenTables writes the open-own and open-1k tables, one row per
// planned arm, in plan order, with the rate each arm ran at and, for an
// arm a phase left out, why.
func renderOpenTables(p func(string, ...any), rep *report) {
	if len(rep.OpenPlan) == 0 {
		return
	}
	cpu := func(r *armRow, role string) string {
		if s, ok := r.CPU[role]; ok {
			return fmtNum(s.Median, 3)
		}
		return "–"
	}
	p("### %s: each arm at half its own maximum\n\n", openOwnLoad)
	p("Each arm at half the median rps of its own closed-64 runs, %d workers on a fixed schedule, latency from each request's intended start; the same validity rule (a backlog above 1%% of the schedule: rate not kept). ", openWorkers)
	p("The arms run at different rates, so the latencies here are absolute, not added over the direct arm.\n\n")
	p("| arm | closed-64 rps | rate /s | rps | p50 ms | p99 ms | p99.9 ms | proxy | registry | redis | loadgen | non-2xx | valid |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, pl := range rep.OpenPlan {
		r := findRow(rep.Rows, openOwnLoad, pl.Arm)
		if pl.OwnRate == 0 || r == nil {
			p("| %s | %s | – | – | – | – | – | – | – | – | – | – | %s |\n", pl.Arm, fmtMax(pl.MaxRPS), skipOr(pl.OwnSkip))
			continue
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			pl.Arm, fmtMax(pl.MaxRPS), fmtNum(r.Rate, 0), fmtSpread(r.RPS, 0), fmtSpread(r.P50, 2), fmtSpread(r.P99, 2), fmtSpread(r.P999, 2),
			cpu(r, "proxy"), cpu(r, "registry"), cpu(r, "redis"), cpu(r, "loadgen"), r.Non2xx+r.Errors, validCell(*r))
	}
	p("\n### %s: every arm at %.0f requests/s\n\n", openFixedLoad, openFixedRate)
	p("The issue's headline figure: added latency at a fixed %.0f requests/s, %d workers on a fixed schedule, latency from each request's intended start, added over the direct arm at the same rate in the same repetition. ", openFixedRate, openWorkers)
	p("Only arms whose closed-64 maximum is at least twice the rate run it.\n\n")
	p("| arm | closed-64 rps | rate /s | rps | +p50 ms | +p99 ms | +p99.9 ms | p99 ms | proxy | registry | redis | non-2xx | valid |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var direct *armRow
	for _, pl := range rep.OpenPlan {
		r := findRow(rep.Rows, openFixedLoad, pl.Arm)
		if pl.FixedRate == 0 || r == nil {
			p("| %s | %s | – | – | – | – | – | – | – | – | – | – | %s |\n", pl.Arm, fmtMax(pl.MaxRPS), skipOr(pl.FixedSkip))
			continue
		}
		if pl.Arm == "direct" {
			direct = r
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			pl.Arm, fmtMax(pl.MaxRPS), fmtNum(r.Rate, 0), fmtSpread(r.RPS, 0), fmtSpread(r.AddP50, 2), fmtSpread(r.AddP99, 2), fmtSpread(r.AddP999, 2),
			fmtSpread(r.P99, 2), cpu(r, "proxy"), cpu(r, "registry"), cpu(r, "redis"), r.Non2xx+r.Errors, validCell(*r))
	}
	if direct != nil {
		p("\nDirect at %.0f/s (absolute): p50 %s ms, p99 %s ms, p99.9 %s ms.\n", openFixedRate,
			fmtSpread(direct.P50, 2), fmtSpread(direct.P99, 2), fmtSpread(direct.P999, 2))
	}
	p("\n")
}

// fmtMax is an arm's closed-64 maximum, "–" when it had no valid run.
func fmtMax(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmtNum(v, 0)
}

// skipOr is a left-out arm's reason; a planned arm with no row (the run
// was interrupted) says so.
func skipOr(reason string) string {
	if reason == "" {
		return "not run: interrupted"
	}
	return reason
}
