package main

import "strings"

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
	p("| arm | closed-64 rps | rate /s | rps | p50 ms | p99 ms | p99.9 ms | proxy | registry | redis | postgres | loadgen | non-2xx | valid |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, pl := range rep.OpenPlan {
		r := findRow(rep.Rows, openOwnLoad, pl.Arm)
		if pl.OwnRate == 0 || r == nil {
			p("| %s | %s | – | – | – | – | – | – | – | – | – | – | – | %s |\n", pl.Arm, fmtMax(pl.MaxRPS), skipOr(pl.OwnSkip))
			continue
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			pl.Arm, fmtMax(pl.MaxRPS), fmtNum(r.Rate, 0), fmtSpread(r.RPS, 0), fmtSpread(r.P50, 2), fmtSpread(r.P99, 2), fmtSpread(r.P999, 2),
			cpu(r, "proxy"), cpu(r, "registry"), cpu(r, "redis"), cpu(r, "postgres"), cpu(r, "loadgen"), r.Non2xx+r.Errors, validCell(*r))
	}
	p("\n### %s: every arm at %.0f requests/s\n\n", openFixedLoad, openFixedRate)
	p("The issue's headline figure: added latency at a fixed %.0f requests/s, %d workers on a fixed schedule, latency from each request's intended start, added over the direct arm at the same rate in the same repetition. ", openFixedRate, openWorkers)
	p("Every arm whose closed-64 maximum is at least the rate runs it; one whose maximum is below the rate, or that falls behind the schedule, did not keep the rate, and its targets at %.0f/s are a MISS.\n\n", openFixedRate)
	p("| arm | closed-64 rps | rate /s | rps | +p50 ms | +p99 ms | +p99.9 ms | p99 ms | proxy | registry | redis | postgres | non-2xx | valid |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var direct *armRow
	for _, pl := range rep.OpenPlan {
		r := findRow(rep.Rows, openFixedLoad, pl.Arm)
		if pl.FixedRate == 0 || r == nil {
			p("| %s | %s | – | – | – | – | – | – | – | – | – | – | – | %s |\n", pl.Arm, fmtMax(pl.MaxRPS), skipOr(pl.FixedSkip))
			continue
		}
		if pl.Arm == "direct" {
			direct = r
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			pl.Arm, fmtMax(pl.MaxRPS), fmtNum(r.Rate, 0), fmtSpread(r.RPS, 0), fmtSpread(r.AddP50, 2), fmtSpread(r.AddP99, 2), fmtSpread(r.AddP999, 2),
			fmtSpread(r.P99, 2), cpu(r, "proxy"), cpu(r, "registry"), cpu(r, "redis"), cpu(r, "postgres"), r.Non2xx+r.Errors, validCell(*r))
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

// renderHandoffs writes the lease handoff table, one row per
// configuration.
func renderHandoffs(p func(string, ...any), hs []handoffResult) {
	if len(hs) == 0 {
		return
	}
	p("## Lease handoff\n\n")
	p("Handoffs of one resource between two owners, per registry and sidecar status mode, each through a sidecar of its own whose store is the registry's backend (bolt for the etcd registry, a one-member etcd on this machine): the next owner's acquire is already waiting at the registry when the holder releases. ")
	p("Times from the release call to the waiting acquirer's grant, and to its first write accepted by the sidecar (segment 1 under the new fence; in proof mode the Transport first fetches the new lease's proof).\n\n")
	p("| configuration | registry | store | status | handoffs | release → grant p50 / p99 / p99.9 / max ms | release → first accepted write p50 / p99 / p99.9 / max ms | error |\n")
	p("|---|---|---|---|---:|---|---|---|\n")
	for _, h := range hs {
		l := func(s latencySummary) string {
			return fmtNum(s.P50, 2) + " / " + fmtNum(s.P99, 2) + " / " + fmtNum(s.P999, 2) + " / " + fmtNum(s.Max, 2)
		}
		p("| %s | %s | %s | %s | %d | %s | %s | %s |\n", h.Name, orDash(h.Registry), h.Store, h.Status, h.Handoffs, l(h.ToGrant), l(h.ToWrite), tableCell(orDash(h.FirstError)))
	}
	p("\n")
}

// renderProfileSummaries writes the CPU profiles section: a link to each
// profile and its top functions by flat and by cumulative time.
func renderProfileSummaries(p func(string, ...any), ps []profiled) {
	if len(ps) == 0 {
		return
	}
	p("## CPU profiles\n\n")
	p("After the measured phases, each durable arm once more under %d workers, closed loop, with a CPU profile of its sidecar (and, in registry mode, of the registry) from `/debug/pprof/profile`; these runs are not in the tables above. ", profileWorkers)
	p("Open one with `go tool pprof -http=: FILE.pprof`; the `.txt` beside it is `go tool pprof -top`; [profiles/README.md](profiles/README.md) also lists fencegate's own functions by cumulative time.\n\n")
	for _, pr := range ps {
		p("### %s, %s\n\n", pr.Arm, pr.Role)
		if pr.Err != "" {
			p("not taken: %s\n\n", pr.Err)
			continue
		}
		file := "profiles/" + pr.File
		p("[%s](%s) ([top](%s)), %d requests during the profile.\n\n", pr.File, file, strings.TrimSuffix(file, ".pprof")+".txt", pr.Requests)
		for _, part := range []struct {
			title string
			lines []string
		}{{"by flat time (the function itself)", pr.Top}, {"by cumulative time (with what it calls)", pr.Cum}} {
			p("Top %d %s:\n\n```\n      flat  flat%%   sum%%        cum   cum%%\n", profileSummaryTop, part.title)
			for _, ln := range part.lines[:min(len(part.lines), profileSummaryTop)] {
				p("%s\n", ln)
			}
			p("```\n\n")
		}
	}
}
