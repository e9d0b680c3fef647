package authn

import (
	"testing"
	"time"
)

// The learned bound advances with the local clock from the proof that
// set it, is never lowered by an older proof, and is zero before any.
func TestLearnedTimeBound(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	skew := time.Second
	l := NewTimeBound(nil, skew)
	if !l.bound(t0).IsZero() || l.behind(t0) != 0 {
		t.Fatal("a bound before any proof")
	}
	// Local clock 10 s behind the registry's.
	l.observe(t0.Add(10*time.Second), t0)
	if got := l.bound(t0.Add(3 * time.Second)); !got.Equal(t0.Add(12 * time.Second)) {
		t.Fatalf("bound 3 s later: %v, want iat - skew + 3 s", got.Sub(t0))
	}
	if got := l.behind(t0); got != 9*time.Second {
		t.Fatalf("behind: %v, want 9s", got)
	}
	// An old proof (a replay) teaches nothing.
	l.observe(t0.Add(-time.Hour), t0.Add(time.Second))
	if got := l.bound(t0.Add(time.Second)); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("an older proof lowered the bound to %v", got.Sub(t0))
	}
	// A later one raises it.
	l.observe(t0.Add(30*time.Second), t0.Add(time.Second))
	if got := l.bound(t0.Add(time.Second)); !got.Equal(t0.Add(29 * time.Second)) {
		t.Fatalf("a later proof: bound %v, want 29s", got.Sub(t0))
	}
	// A clock within the skew of the registry's is never behind.
	ok := NewTimeBound(nil, skew)
	ok.observe(t0.Add(500*time.Millisecond), t0)
	if ok.behind(t0) != 0 || ok.behind(t0.Add(time.Minute)) != 0 {
		t.Fatal("a clock within the skew counts as behind")
	}
}
