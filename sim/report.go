package sim

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// MaxUnknownBudget is the design's target for time in UNKNOWN (15 min).
const MaxUnknownBudget = 15 * time.Minute

// Gate is the verdict: "" when every invariant held, else what broke.
func (r *Report) Gate() string {
	var bad []string
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.Stale, "stale writes accepted"},
		{r.Forged, "forged writes accepted"},
		{r.AuthChanged, "auth failures changed a highest fence"},
		{r.Skipped, "mutations skipped authentication or the fence check"},
		{r.Gaps, "segment gaps accepted"},
		{r.Regressions, "regressions accepted"},
		{r.DataMismatch, "backend data differs from the receipts"},
		{r.Conflicts, "conflicting payloads accepted"},
		{r.SDKStale, "writes the SDK sent after its lease ended"},
	} {
		if c.n > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if r.UnknownOver > 0 || r.MaxUnknown > MaxUnknownBudget {
		bad = append(bad, fmt.Sprintf("%d outcomes that evidence could settle stayed UNKNOWN over %s (the longest %s)", r.UnknownOver, MaxUnknownBudget, r.MaxUnknown))
	}
	if r.HandoffOver*100 > r.Handoffs {
		bad = append(bad, fmt.Sprintf("%d of %d hand-offs over their budget (more than 1%%: the p99 is over budget)", r.HandoffOver, r.Handoffs))
	}
	if r.Accepted == 0 {
		bad = append(bad, "no write was accepted: the simulation tested nothing")
	}
	return strings.Join(bad, "; ")
}

// Write prints the table, the failure (if any) and the gate line.
func (r *Report) Write(w io.Writer) {
	if f := r.Failure; f != nil {
		fmt.Fprintf(w, "FIRST FAILING ROUND %d (%d events); replay: the same --seed with --round %d\n", f.Round, f.Events, f.Round)
		fmt.Fprintln(w, "  config", f.Config)
		for _, v := range f.Violations {
			fmt.Fprintln(w, "  violation:", v)
		}
		fmt.Fprintf(w, "shortest failing history (%d of %d events):\n", len(f.ShrunkEvents), f.Events)
		for _, e := range f.ShrunkEvents {
			fmt.Fprintln(w, "  script", e)
		}
		for _, l := range f.ShrunkHistory {
			fmt.Fprintln(w, "  ", l)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("rounds", r.Rounds)
	row("writes attempted", r.Attempted)
	row("accepted", r.Accepted)
	row("stale accepted", r.Stale)
	row("forged accepted", r.Forged)
	row("auth failures that changed a highest fence", r.AuthChanged)
	row("protected mutations that skipped authentication or the fence check", r.Skipped)
	row("segment gaps accepted", r.Gaps)
	row("regressions accepted", r.Regressions)
	row("conflicting payloads accepted", r.Conflicts)
	row("backend data that differs from the receipts", r.DataMismatch)
	row("writes the SDK sent after its lease ended", r.SDKStale)
	row("unknown outcomes", r.Unknowns)
	row("unknown outcomes over the 15-minute budget", r.UnknownOver)
	row("max virtual time in UNKNOWN (settleable)", r.MaxUnknown)
	row("unknown outcomes no evidence can settle (left UNKNOWN)", r.NoEvidence)
	row("handoff latency p50/p99 (virtual)", fmt.Sprintf("%s / %s (%d hand-offs)", r.HandoffP50, r.HandoffP99, r.Handoffs))
	row("hand-offs over their budget (at most 1%)", r.HandoffOver)
	row("hand-offs that waited for an unknown outcome", r.HandoffBlocked)
	tw.Flush()
	if len(r.Seen) > 0 {
		fmt.Fprintln(w, "seen (not invariants):")
		keys := make([]string, 0, len(r.Seen))
		for k := range r.Seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range keys {
			fmt.Fprintf(tw, "  %s\t%d\n", k, r.Seen[k])
		}
		tw.Flush()
	}
	if r.HistoryHash != "" {
		fmt.Fprintln(w, "history", r.HistoryHash)
	}
	if g := r.Gate(); g != "" {
		fmt.Fprintln(w, "gate: FAIL", g)
	} else {
		fmt.Fprintln(w, "gate: PASS")
	}
}
