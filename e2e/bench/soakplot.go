package main

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// soak.svg is hand-written SVG in plot.go's style: one panel per arm, the
// proxy's VmRSS, RssAnon and RssFile (MiB, linear) over the soak's time,
// with the target's RSS bound as a dashed line.

const (
	soakPanelW = 640
	soakPanelH = 200
	soakLeft   = 60
	soakTopPad = 34
	soakBotPad = 40
)

var soakSeries = [3]string{"RSS", "anon", "file"}

// renderSoakSVG draws every run's resident set over time.
func renderSoakSVG(runs []*soakRun, t soakTarget) string {
	panelTotal := soakTopPad + soakPanelH + soakBotPad
	width := soakLeft + soakPanelW + 30
	height := svgLegendPad + max(len(runs), 1)*panelTotal + 10
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="16" font-size="13" font-weight="bold">Proxy resident set over the soak (MiB)</text>`+"\n", 10)
	for i, s := range soakSeries {
		x := soakLeft + 340 + i*60
		p(`<rect x="%d" y="7" width="10" height="10" fill="%s"/><text x="%d" y="16">%s</text>`+"\n", x, svgColors[i], x+14, s)
	}
	p(`<line x1="%d" y1="12" x2="%d" y2="12" stroke="#888" stroke-dasharray="4 3"/><text x="%d" y="16">target %g MB</text>`+"\n",
		soakLeft+525, soakLeft+545, soakLeft+549, t.RSSMB)
	if len(runs) == 0 {
		p(`<text x="%d" y="%d">no runs</text>`+"\n", soakLeft, svgLegendPad+20)
	}
	for ri, r := range runs {
		y0 := float64(svgLegendPad + ri*panelTotal + soakTopPad)
		p(`<text x="%d" y="%.0f" font-size="12" font-weight="bold">%s (retention.maxPerResource %d)</text>`+"\n",
			soakLeft, y0-10, html.EscapeString(r.Arm), r.Retention.MaxPerResource)
		maxX, maxY := 1.0, t.rssMiB()
		for _, sm := range r.Samples {
			maxX = math.Max(maxX, sm.Elapsed)
			maxY = math.Max(maxY, mib(sm.RSS.RSS))
		}
		top := niceCeil(maxY * 1.05)
		minutes := maxX >= 120
		unit, scale := "s", 1.0
		if minutes {
			unit, scale = "min", 60
		}
		xOf := func(sec float64) float64 { return soakLeft + soakPanelW*sec/maxX }
		yOf := func(v float64) float64 { return y0 + soakPanelH*(1-math.Min(v/top, 1)) }
		for _, v := range ticks(top) {
			y := yOf(v)
			p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
				soakLeft, y, soakLeft+soakPanelW, y, soakLeft-6, y+4, fmtAxis(v))
		}
		for _, v := range ticks(maxX / scale) {
			x := xOf(v * scale)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
				x, y0+soakPanelH, x, y0+soakPanelH+4, x, y0+soakPanelH+16, fmtAxis(v))
		}
		p(`<text x="%d" y="%.0f" text-anchor="middle">elapsed (%s)</text>`+"\n", soakLeft+soakPanelW/2, y0+soakPanelH+32, unit)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", soakLeft, y0, soakLeft, y0+soakPanelH)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", soakLeft, y0+soakPanelH, soakLeft+soakPanelW, y0+soakPanelH)
		ty := yOf(t.rssMiB())
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>`+"\n", soakLeft, ty, soakLeft+soakPanelW, ty)
		for si := range soakSeries {
			var pts []string
			for _, sm := range r.Samples {
				if sm.RSS.RSS <= 0 {
					continue // unreadable: the proxy had exited
				}
				v := [3]int64{sm.RSS.RSS, sm.RSS.Anon, sm.RSS.File}[si]
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(sm.Elapsed), yOf(mib(v))))
			}
			if len(pts) == 0 {
				continue
			}
			p(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s %s</title></polyline>`+"\n",
				svgColors[si], strings.Join(pts, " "), html.EscapeString(r.Arm), soakSeries[si])
		}
	}
	p("</svg>\n")
	return b.String()
}

// niceCeil is the smallest of 1, 2, 2.5, 5 x 10^k at or above v (v > 0).
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	d := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*d >= v {
			return m * d
		}
	}
	return 10 * d
}

// ticks are about five round values from 0 up to top.
func ticks(top float64) []float64 {
	if !(top > 0) || math.IsInf(top, 0) {
		return []float64{0}
	}
	step := niceCeil(top / 5)
	var out []float64
	for i := 0; float64(i)*step <= top*1.0001 && len(out) < 12; i++ {
		out = append(out, float64(i)*step)
	}
	return out
}

// fmtAxis labels a linear axis tick: at most four significant digits.
func fmtAxis(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}
