package main

import (
	"encoding/json"
	"fmt"
)

// dashboard is the part of Grafana's dashboard model the picture needs.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
}

// panel is one panel, or a row (whose collapsed children are in Panels).
type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	GridPos gridPos `json:"gridPos"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// gridPos is a panel's place on Grafana's grid: 24 columns, rows of one
// unit each.
type gridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

const gridColumns = 24

// parse decodes a dashboard and checks its layout.
func parse(raw []byte) (*dashboard, error) {
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return &d, nil
}

// flat is every panel and row, collapsed rows' children after their row.
func (d *dashboard) flat() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// check refuses panels outside the grid, without a size, or overlapping.
func (d *dashboard) check() error {
	all := d.flat()
	for i, p := range all {
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > gridColumns {
			return fmt.Errorf("%w: panel %d %q at %+v", ErrLayout, p.ID, p.Title, g)
		}
		for _, q := range all[:i] {
			h := q.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				return fmt.Errorf("%w: panel %d %q overlaps panel %d %q", ErrLayout, p.ID, p.Title, q.ID, q.Title)
			}
		}
	}
	return nil
}
