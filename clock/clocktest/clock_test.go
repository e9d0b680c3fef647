package clocktest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
)

// recv takes a value from ch if one is ready.
func recv(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func at(d time.Duration) time.Time { return clocktest.Start.Add(d) }

func TestStartAndNoGoingBack(t *testing.T) {
	c := clocktest.New(time.Time{})
	if !c.Now().Equal(clocktest.Start) {
		t.Fatalf("starts at %s, want %s", c.Now(), clocktest.Start)
	}
	c.Advance(time.Second)
	c.Advance(-time.Hour)
	c.AdvanceTo(clocktest.Start)
	if !c.Now().Equal(at(time.Second)) {
		t.Errorf("went back to %s", c.Now())
	}
	other := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := clocktest.New(other).Now(); !got.Equal(other) {
		t.Errorf("New(%s) reads %s", other, got)
	}
}

// TestTimersFireInDeadlineOrder: after each step exactly the timers whose
// deadline was reached have fired, each with its own deadline (not the
// time the step ended at), and Next names the earliest armed deadline.
func TestTimersFireInDeadlineOrder(t *testing.T) {
	type step struct {
		advance time.Duration
		fired   []int // indexes of the timers that fire during this step
	}
	tests := []struct {
		name   string
		timers []time.Duration
		steps  []step
	}{
		{"one big step", []time.Duration{3 * time.Second, time.Second, 2 * time.Second}, []step{{5 * time.Second, []int{0, 1, 2}}}},
		{"exact deadlines", []time.Duration{3 * time.Second, time.Second, 2 * time.Second}, []step{
			{999 * time.Millisecond, nil}, {time.Millisecond, []int{1}}, {time.Second, []int{2}}, {time.Second, []int{0}}, {time.Hour, nil}}},
		{"equal deadlines", []time.Duration{time.Second, time.Second, 2 * time.Second}, []step{{time.Second, []int{0, 1}}, {time.Second, []int{2}}}},
		{"zero and negative fire at once", []time.Duration{0, -time.Second, time.Nanosecond}, []step{{0, []int{0, 1}}, {time.Nanosecond, []int{2}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.New(time.Time{})
			timers := make([]clock.Timer, len(tc.timers))
			for i, d := range tc.timers {
				timers[i] = c.NewTimer(d)
			}
			var elapsed time.Duration
			for si, s := range tc.steps {
				c.Advance(s.advance)
				elapsed += s.advance
				want := map[int]bool{}
				for _, i := range s.fired {
					want[i] = true
				}
				for i, tm := range timers {
					v, ok := recv(tm.C())
					if ok != want[i] {
						t.Fatalf("step %d (t+%s): timer %d (%s) fired=%v, want %v", si, elapsed, i, tc.timers[i], ok, want[i])
					}
					if ok && !v.Equal(at(max(tc.timers[i], 0))) {
						t.Errorf("timer %d sent %s, want its deadline %s", i, v, at(tc.timers[i]))
					}
				}
				if !c.Now().Equal(at(elapsed)) {
					t.Errorf("after step %d Now is %s, want %s", si, c.Now(), at(elapsed))
				}
			}
			if n := c.Pending(); n != 0 {
				t.Errorf("%d timers still pending", n)
			}
		})
	}
}

func TestNext(t *testing.T) {
	c := clocktest.New(time.Time{})
	if _, ok := c.Next(); ok {
		t.Fatal("Next with nothing armed")
	}
	a := c.NewTimer(3 * time.Second)
	c.NewTimer(2 * time.Second)
	tk := c.NewTicker(5 * time.Second)
	if n, ok := c.Next(); !ok || !n.Equal(at(2*time.Second)) {
		t.Fatalf("Next %s %v, want %s", n, ok, at(2*time.Second))
	}
	c.AdvanceTo(at(2 * time.Second))
	a.Stop()
	if n, _ := c.Next(); !n.Equal(at(5 * time.Second)) {
		t.Errorf("Next %s, want the ticker at %s", n, at(5*time.Second))
	}
	c.AdvanceTo(at(5 * time.Second))
	if n, _ := c.Next(); !n.Equal(at(10 * time.Second)) {
		t.Errorf("Next %s, want the ticker's second tick at %s", n, at(10*time.Second))
	}
	tk.Stop()
	if _, ok := c.Next(); ok || c.Pending() != 0 {
		t.Errorf("something armed after all stopped: pending %d", c.Pending())
	}
}

// TestTimerStopReset follows the time package's documented semantics for
// Go 1.23 and later: Stop and Reset report true while the timer's value has
// not been received, and no stale value is received after they return.
func TestTimerStopReset(t *testing.T) {
	tests := []struct {
		name string
		// before: 0 leave armed, 1 let it fire (unreceived), 2 fire and receive, 3 stop first
		before int
		reset  bool // Reset(time.Second) instead of Stop
		want   bool // what Stop/Reset reports
	}{
		{"stop armed", 0, false, true},
		{"stop fired unreceived", 1, false, true},
		{"stop received", 2, false, false},
		{"stop stopped", 3, false, false},
		{"reset armed", 0, true, true},
		{"reset fired unreceived", 1, true, true},
		{"reset received", 2, true, false},
		{"reset stopped", 3, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.New(time.Time{})
			tm := c.NewTimer(time.Second)
			switch tc.before {
			case 1:
				c.Advance(time.Second)
			case 2:
				c.Advance(time.Second)
				if _, ok := recv(tm.C()); !ok {
					t.Fatal("did not fire")
				}
			case 3:
				tm.Stop()
			}
			var got bool
			if tc.reset {
				got = tm.Reset(time.Second)
			} else {
				got = tm.Stop()
			}
			if got != tc.want {
				t.Errorf("reported %v, want %v", got, tc.want)
			}
			if v, ok := recv(tm.C()); ok {
				t.Fatalf("stale value %s received after Stop/Reset", v)
			}
			base := c.Now()
			c.Advance(999 * time.Millisecond)
			if _, ok := recv(tm.C()); ok {
				t.Fatal("fired early")
			}
			c.Advance(time.Millisecond)
			v, ok := recv(tm.C())
			if ok != tc.reset {
				t.Fatalf("fired=%v a second after, want %v", ok, tc.reset)
			}
			if ok && !v.Equal(base.Add(time.Second)) {
				t.Errorf("reset timer sent %s, want %s", v, base.Add(time.Second))
			}
			c.Advance(time.Hour)
			if v, ok := recv(tm.C()); ok {
				t.Errorf("fired twice (%s)", v)
			}
		})
	}
}

func TestTimerResetToZeroFiresAtOnce(t *testing.T) {
	c := clocktest.New(time.Time{})
	tm := c.NewTimer(time.Hour)
	tm.Reset(0)
	if v, ok := recv(tm.C()); !ok || !v.Equal(clocktest.Start) {
		t.Fatalf("Reset(0): %s %v", v, ok)
	}
	if c.Pending() != 0 {
		t.Errorf("pending %d", c.Pending())
	}
}

func TestTicker(t *testing.T) {
	c := clocktest.New(time.Time{})
	tk := c.NewTicker(time.Second)
	c.Advance(999 * time.Millisecond)
	if _, ok := recv(tk.C()); ok {
		t.Fatal("ticked early")
	}
	c.Advance(time.Millisecond)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(time.Second)) {
		t.Fatalf("first tick %s %v", v, ok)
	}
	// A slow receiver: ticks at 2s, 3s, 4s come due; the channel holds the
	// first, the rest are dropped.
	c.Advance(3 * time.Second)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(2*time.Second)) {
		t.Fatalf("after a slow receive %s %v, want the tick at 2s", v, ok)
	}
	if v, ok := recv(tk.C()); ok {
		t.Fatalf("a dropped tick came through: %s", v)
	}
	c.Advance(time.Second)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(5*time.Second)) {
		t.Fatalf("tick after the drops %s %v, want 5s", v, ok)
	}
	// Reset: the next tick comes a new period after the call, and a tick
	// due but unreceived is dropped.
	c.Advance(1500 * time.Millisecond) // tick at 6s waits in the channel
	tk.Reset(2 * time.Second)          // at 6.5s
	if v, ok := recv(tk.C()); ok {
		t.Fatalf("stale tick %s after Reset", v)
	}
	c.Advance(1999 * time.Millisecond)
	if _, ok := recv(tk.C()); ok {
		t.Fatal("ticked before the new period")
	}
	c.Advance(time.Millisecond)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(8500*time.Millisecond)) {
		t.Fatalf("tick after Reset %s %v, want 8.5s", v, ok)
	}
	// Stop: nothing more, and a tick waiting in the channel is dropped.
	c.Advance(2 * time.Second)
	tk.Stop()
	c.Advance(time.Hour)
	if v, ok := recv(tk.C()); ok {
		t.Fatalf("tick %s after Stop", v)
	}
	if c.Pending() != 0 {
		t.Errorf("pending %d after Stop", c.Pending())
	}
	// Reset restarts a stopped ticker.
	tk.Reset(time.Minute)
	c.Advance(time.Minute)
	if _, ok := recv(tk.C()); !ok {
		t.Fatal("a stopped ticker did not restart on Reset")
	}
}

func TestTickerPanicsOnNonPositive(t *testing.T) {
	c := clocktest.New(time.Time{})
	for name, f := range map[string]func(){
		"NewTicker(0)":  func() { c.NewTicker(0) },
		"NewTicker(-1)": func() { c.NewTicker(-1) },
		"Reset(0)":      func() { c.NewTicker(time.Second).Reset(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestArmedAndPending(t *testing.T) {
	c := clocktest.New(time.Time{})
	a := c.NewTimer(time.Second)
	c.NewTimer(0) // fires at once: armed, never pending
	tk := c.NewTicker(time.Second)
	if c.Armed() != 3 || c.Pending() != 2 {
		t.Fatalf("armed %d pending %d, want 3 and 2", c.Armed(), c.Pending())
	}
	a.Reset(time.Minute)
	tk.Reset(time.Minute)
	if c.Armed() != 5 || c.Pending() != 2 {
		t.Fatalf("armed %d pending %d after two Resets, want 5 and 2", c.Armed(), c.Pending())
	}
	c.Advance(time.Minute)
	if c.Pending() != 1 {
		t.Fatalf("pending %d after the timer fired, want the ticker only", c.Pending())
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	if !c.WaitPending(ctx, 1) || c.WaitPending(done, 2) || !c.WaitArmed(ctx, 5) || c.WaitArmed(done, 6) {
		t.Error("WaitPending/WaitArmed answered wrongly")
	}
}

// TestConcurrentWaiters: goroutines arm timers while the test waits (with
// WaitPending, reading no time) for all of them and then advances: every
// one is woken with its deadline. Run with -race.
func TestConcurrentWaiters(t *testing.T) {
	const n = 64
	c := clocktest.New(time.Time{})
	var wg sync.WaitGroup
	got := make([]time.Time, n)
	for i := range n {
		wg.Go(func() {
			tm := c.NewTimer(time.Duration(i+1) * time.Millisecond)
			got[i] = <-tm.C()
			_ = c.Now()
		})
	}
	if !c.WaitPending(context.Background(), n) {
		t.Fatal("WaitPending")
	}
	done := make(chan struct{})
	go func() {
		for range 100 {
			c.Advance(time.Millisecond)
		}
		close(done)
	}()
	wg.Wait()
	<-done
	for i, v := range got {
		if want := at(time.Duration(i+1) * time.Millisecond); !v.Equal(want) {
			t.Errorf("waiter %d woke with %s, want %s", i, v, want)
		}
	}
}

// script drives a clock with a seeded random mix of timers, tickers,
// Stops, Resets, Advances and receives, and logs every observation.
func script(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := clocktest.New(time.Time{})
	var timers []clock.Timer
	var tickers []clock.Ticker
	var log strings.Builder
	for step := range 400 {
		d := time.Duration(rng.IntN(5000)-500) * time.Millisecond
		switch op := rng.IntN(7); {
		case op == 0:
			timers = append(timers, c.NewTimer(d))
		case op == 1 && d > 0:
			tickers = append(tickers, c.NewTicker(d))
		case op == 2 && len(timers) > 0:
			i := rng.IntN(len(timers))
			fmt.Fprintf(&log, "%d stop timer %d: %v\n", step, i, timers[i].Stop())
		case op == 3 && len(timers) > 0:
			i := rng.IntN(len(timers))
			fmt.Fprintf(&log, "%d reset timer %d: %v\n", step, i, timers[i].Reset(d))
		case op == 4 && len(tickers) > 0:
			i := rng.IntN(len(tickers))
			if d > 0 {
				tickers[i].Reset(d)
			} else {
				tickers[i].Stop()
			}
		default:
			c.Advance(d)
		}
		for i, tm := range timers {
			if v, ok := recv(tm.C()); ok {
				fmt.Fprintf(&log, "%d timer %d fired %d\n", step, i, v.Sub(clocktest.Start))
			}
		}
		for i, tk := range tickers {
			if v, ok := recv(tk.C()); ok {
				fmt.Fprintf(&log, "%d ticker %d ticked %d\n", step, i, v.Sub(clocktest.Start))
				if v.After(c.Now()) {
					fmt.Fprintf(&log, "TICK FROM THE FUTURE\n")
				}
			}
		}
		fmt.Fprintf(&log, "%d now %d pending %d armed %d\n", step, c.Now().Sub(clocktest.Start), c.Pending(), c.Armed())
	}
	return log.String()
}

// TestDeterministic: the same calls give the same observations, every time.
func TestDeterministic(t *testing.T) {
	for seed := range uint64(5) {
		a, b := script(seed), script(seed)
		if a != b {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if strings.Contains(a, "FROM THE FUTURE") {
			t.Fatalf("seed %d: a value later than Now was received", seed)
		}
		if !strings.Contains(a, "fired") || !strings.Contains(a, "ticked") {
			t.Fatalf("seed %d: the script exercised nothing", seed)
		}
	}
}
