package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The plot is hand-written SVG (no plotting dependency): one panel per
// load, one group of three bars per arm (added p50, p99, p99.9 over the
// direct arm, medians of the repetitions) on a log scale, since p99.9 is
// often ten times p50. Values at or below the scale's floor (including a
// negative difference: the arm was faster than direct within noise) sit
// on the floor.

const (
	svgFloorMs   = 0.01
	svgGroupW    = 54
	svgBarW      = 14
	svgPanelH    = 200
	svgLeft      = 120 // room for the first arm's slanted label
	svgTopPad    = 34
	svgLabelPad  = 130
	svgLegendPad = 30
)

var svgColors = [3]string{"#4C78A8", "#F58518", "#E45756"}
var svgSeries = [3]string{"+p50", "+p99", "+p99.9"}

// renderSVG draws the added-latency bars of rows.
func renderSVG(rows []armRow) string {
	var loads []string
	byLoad := map[string][]armRow{}
	for _, r := range rows {
		if r.Arm == "direct" {
			continue
		}
		if _, ok := byLoad[r.Load]; !ok {
			loads = append(loads, r.Load)
		}
		byLoad[r.Load] = append(byLoad[r.Load], r)
	}
	maxArms, maxMs := 1, 1.0
	for _, l := range loads {
		maxArms = max(maxArms, len(byLoad[l]))
		for _, r := range byLoad[l] {
			for _, v := range []float64{r.AddP50.Median, r.AddP99.Median, r.AddP999.Median} {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					maxMs = math.Max(maxMs, v)
				}
			}
		}
	}
	top := math.Pow(10, math.Ceil(math.Log10(maxMs)))
	panelTotal := svgTopPad + svgPanelH + svgLabelPad
	width := max(svgLeft+maxArms*svgGroupW+20, 760) // the title and legend need 760
	height := svgLegendPad + len(loads)*panelTotal + 10
	if len(loads) == 0 {
		height = svgLegendPad + 40
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="16" font-size="13" font-weight="bold">Latency added over direct (ms, log scale; median of repetitions)</text>`+"\n", 10)
	for i, s := range svgSeries {
		x := svgLeft + 430 + i*70
		p(`<rect x="%d" y="7" width="10" height="10" fill="%s"/><text x="%d" y="16">%s</text>`+"\n", x, svgColors[i], x+14, s)
	}
	if len(loads) == 0 {
		p(`<text x="%d" y="%d">no runs</text>`+"\n", svgLeft, svgLegendPad+20)
	}
	yOf := func(v, y0 float64) float64 {
		if math.IsNaN(v) || v <= svgFloorMs {
			return y0 + svgPanelH
		}
		frac := (math.Log10(v) - math.Log10(svgFloorMs)) / (math.Log10(top) - math.Log10(svgFloorMs))
		return y0 + svgPanelH*(1-math.Min(frac, 1))
	}
	for li, l := range loads {
		y0 := float64(svgLegendPad + li*panelTotal + svgTopPad)
		p(`<text x="%d" y="%.0f" font-size="12" font-weight="bold">%s</text>`+"\n", svgLeft, y0-10, html.EscapeString(l))
		for d := svgFloorMs; d <= top*1.0001; d *= 10 {
			y := yOf(d, y0)
			p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
				svgLeft, y, width-20, y, svgLeft-6, y+4, fmtTick(d))
		}
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", svgLeft, y0, svgLeft, y0+svgPanelH)
		for ai, r := range byLoad[l] {
			gx := svgLeft + ai*svgGroupW + (svgGroupW-3*svgBarW)/2
			for si, v := range []float64{r.AddP50.Median, r.AddP99.Median, r.AddP999.Median} {
				y := yOf(v, y0)
				p(`<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s %s ms</title></rect>`+"\n",
					gx+si*svgBarW, y, svgBarW-1, y0+svgPanelH-y, svgColors[si], html.EscapeString(r.Arm), svgSeries[si], fmtNum(v, 3))
			}
			lx := svgLeft + ai*svgGroupW + svgGroupW/2
			ly := y0 + svgPanelH + 12
			label := r.Arm
			switch {
			case r.Rejected > 0:
				label += " (INVALID)"
			case r.Behind > 0:
				label += " (rate not kept)"
			}
			p(`<text x="%d" y="%.0f" text-anchor="end" transform="rotate(-40 %d %.0f)">%s</text>`+"\n", lx, ly, lx, ly, html.EscapeString(label))
		}
	}
	p("</svg>\n")
	return b.String()
}

// fmtTick labels a decade of the log axis.
func fmtTick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(fmt.Sprintf("%.3f", v), "0")
}
