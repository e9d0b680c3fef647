package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPictureUpToDate: the committed docs/images/dashboard.svg is what the
// committed dashboard draws. Run "go run ./e2e/dashboard" after editing
// the dashboard.
func TestPictureUpToDate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "fencegate", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := render(&buf, d); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "docs", "images", "dashboard.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("docs/images/dashboard.svg is not what dashboard.json draws: run go run ./e2e/dashboard")
	}
	for _, p := range d.flat() {
		if !strings.Contains(buf.String(), esc(fit(p.Title, p.GridPos.W*colPx-gap-12, 7))) {
			t.Errorf("panel %q is not in the picture", p.Title)
		}
	}
}

// TestLayoutRefused: overlapping panels and panels off the grid are
// refused, a clean layout is not.
func TestLayoutRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		json string
		bad  bool
	}{
		"clean":    {`{"panels":[{"id":1,"type":"row","gridPos":{"x":0,"y":0,"w":24,"h":1}},{"id":2,"type":"stat","gridPos":{"x":0,"y":1,"w":12,"h":4}},{"id":3,"type":"stat","gridPos":{"x":12,"y":1,"w":12,"h":4}}]}`, false},
		"overlap":  {`{"panels":[{"id":2,"type":"stat","gridPos":{"x":0,"y":1,"w":12,"h":4}},{"id":3,"type":"stat","gridPos":{"x":11,"y":4,"w":6,"h":4}}]}`, true},
		"too wide": {`{"panels":[{"id":2,"type":"stat","gridPos":{"x":20,"y":0,"w":8,"h":4}}]}`, true},
		"no size":  {`{"panels":[{"id":2,"type":"stat","gridPos":{"x":0,"y":0,"w":0,"h":4}}]}`, true},
		"nested":   {`{"panels":[{"id":1,"type":"row","gridPos":{"x":0,"y":0,"w":24,"h":1},"panels":[{"id":2,"type":"stat","gridPos":{"x":0,"y":0,"w":4,"h":4}}]}]}`, true},
	} {
		_, err := parse([]byte(tc.json))
		if tc.bad != errors.Is(err, ErrLayout) {
			t.Errorf("%s: err %v, want bad layout %v", name, err, tc.bad)
		}
	}
}
