package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/store"
)

var errLost = errors.New("lost")

func lossOf(got string, ok bool, want string) error {
	return fmt.Errorf("%w: got %q (present %v), want %s", errLost, got, ok, want)
}

// TestGenerationCheck: nothing expected passes anything; a match passes;
// a missing or other marker fails the store closed with the first loss,
// which stays until Expect; a check that raced Expect is judged against
// the new marker.
func TestGenerationCheck(t *testing.T) {
	var g store.GenerationCheck
	if err := g.Check("x", true, "", lossOf); err != nil || g.Loss() != nil {
		t.Fatalf("nothing expected: %v, loss %v", err, g.Loss())
	}
	g.Expect("a")
	if exp, err := g.Expected(); exp != "a" || err != nil {
		t.Fatalf("Expected %q %v", exp, err)
	}
	if err := g.Check("a", true, "a", lossOf); err != nil {
		t.Fatalf("a match: %v", err)
	}
	err := g.Check("", false, "a", lossOf)
	if !errors.Is(err, errLost) || err.Error() != `lost: got "" (present false), want a` {
		t.Fatalf("a missing marker: %v", err)
	}
	if err2 := g.Check("b", true, "a", lossOf); err2 != err {
		t.Fatalf("a second mismatch replaced the first loss: %v", err2)
	}
	if _, lost := g.Expected(); lost != err || g.Loss() != err {
		t.Fatalf("the loss is not kept: %v", lost)
	}
	g.Expect("b")
	if g.Loss() != nil {
		t.Fatalf("Expect did not lift the loss: %v", g.Loss())
	}
	// Raced: a call read "a" as expected, then Expect("b") ran.
	if err := g.Check("b", true, "a", lossOf); err != nil {
		t.Fatalf("the marker now expected, judged against the old one: %v", err)
	}
	if err := g.Check("c", true, "a", lossOf); !errors.Is(err, errLost) || err.Error() != `lost: got "c" (present true), want b` {
		t.Fatalf("a marker matching neither: %v", err)
	}
}
