package registrytest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock(time.Time{})
	if !c.Now().Equal(Start) {
		t.Fatalf("starts at %s", c.Now())
	}
	now := c.After(0)
	neg := c.After(-time.Second)
	a := c.After(time.Second)
	b := c.After(2 * time.Second)
	for _, ch := range []<-chan time.Time{now, neg} {
		select {
		case <-ch:
		default:
			t.Fatal("After(<=0) is not ready at once")
		}
	}
	if c.Pending() != 2 || c.Armed() != 4 {
		t.Fatalf("pending %d armed %d", c.Pending(), c.Armed())
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-a:
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	if got := <-a; !got.Equal(Start.Add(time.Second)) {
		t.Errorf("fired with %s", got)
	}
	c.Advance(-time.Hour)
	if !c.Now().Equal(Start.Add(time.Second)) {
		t.Errorf("went back to %s", c.Now())
	}
	select {
	case <-b:
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Hour)
	<-b
	if c.Pending() != 0 {
		t.Errorf("pending %d", c.Pending())
	}
	if !c.WaitArmed(4, time.Millisecond) || c.WaitArmed(5, time.Millisecond) {
		t.Errorf("WaitArmed")
	}
}
