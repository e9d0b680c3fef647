package confcheck_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/confcheck"
)

func TestProblems(t *testing.T) {
	var p confcheck.Problems
	if p.Err() != nil {
		t.Fatal("no problem is an error")
	}
	p.Positive("a", 0)
	p.Positive("ok", time.Second)
	p.Duration("b", -time.Second)
	p.Duration("ok", 0)
	p.Count("c", -1)
	p.Count("ok", 0)
	p.Add("d: %d", 4)
	p.AppendErr(errors.Join(errors.New("e"), errors.New("f")))
	p.AppendErr(errors.New("g"))
	p.AppendErr(nil)
	want := []string{"a: 0s must be positive", "b: -1s must not be negative (0 is the default)",
		"c: -1 must not be negative (0 is the default)", "d: 4", "e", "f", "g"}
	if len(p) != len(want) || p.Err().Error() != strings.Join(want, "\n") {
		t.Fatalf("%d problems:\n%v", len(p), p.Err())
	}
}
