package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
)

func TestSinceUntil(t *testing.T) {
	c := clocktest.New(time.Time{})
	then := c.Now()
	c.Advance(3 * time.Second)
	if got := clock.Since(c, then); got != 3*time.Second {
		t.Errorf("Since %s", got)
	}
	if got := clock.Until(c, then.Add(time.Minute)); got != 57*time.Second {
		t.Errorf("Until %s", got)
	}
}

func TestSleep(t *testing.T) {
	c := clocktest.New(time.Time{})
	if !clock.Sleep(c, 0, nil) || !clock.Sleep(c, -time.Second, nil) {
		t.Fatal("Sleep(<=0) did not return true at once")
	}
	done := make(chan struct{})
	woke := make(chan bool)
	go func() { woke <- clock.Sleep(c, time.Second, done) }()
	c.WaitPending(context.Background(), 1)
	close(done)
	if <-woke {
		t.Error("Sleep reported d passed when done was closed")
	}
	if !c.WaitPending(context.Background(), 0) || c.Pending() != 0 {
		t.Errorf("Sleep left its timer armed: pending %d", c.Pending())
	}
	go func() { woke <- clock.Sleep(c, time.Second, nil) }()
	c.WaitPending(context.Background(), 1)
	c.Advance(time.Second)
	if !<-woke {
		t.Error("Sleep reported false after d passed")
	}
}

// TestReal exercises the process's clocks without timing anything: a
// zero timer fires, a long one stops, a ticker ticks and stops.
func TestReal(t *testing.T) {
	for name, c := range map[string]clock.Clock{"Real": clock.Real(), "Monotonic": clock.Monotonic()} {
		t.Run(name, func(t *testing.T) {
			a := c.Now()
			if b := c.Now(); b.Before(a) {
				t.Errorf("went back: %s then %s", a, b)
			}
			<-c.NewTimer(0).C()
			long := c.NewTimer(time.Hour)
			if !long.Stop() || long.Stop() {
				t.Error("Stop of a long timer: want true then false")
			}
			if !long.Reset(time.Nanosecond) {
				<-long.C()
			} else {
				t.Error("Reset of a stopped timer reported true")
			}
			tk := c.NewTicker(time.Millisecond)
			<-tk.C()
			tk.Reset(time.Hour)
			tk.Stop()
		})
	}
}
