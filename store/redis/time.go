package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
)

// One clock for every replica.
//
// The store's rules compare times: an in-flight marker's deadline against
// "now" (BUSY or MUTATION_UNKNOWN), a receipt's age against retention. With
// several sidecars sharing one Redis, each deciding by its own clock, a
// deadline written by one replica would be judged by another replica's
// clock, and their skew would move when a mutation counts as expired. So by
// default every transition decides at the server's TIME: in a step
// (txn.go) at the Store's estimate of it (serverClock below), which the
// step script checks against its own TIME (StepBehind, StepAhead) before
// it writes; in a WATCH transaction at TIME read in the same pipeline as
// its first WATCHed reads. The caller's Now is replaced by that time, and
// a Begin's Deadline and QuietAt by that time plus the windows the caller
// asked for (Deadline - Now, QuietAt - Now), so each window keeps its
// length whatever the sidecar's clock says (tx.Now gives the time;
// store.NewTxBackend decides at it, see store/tx_time.go). A Resolve's
// evidence is an age (ResolveInput.EvidenceAge, measured on the caller's
// monotonic clock), so it is placed at that time minus that age: a sidecar
// whose clock runs ahead of the server's cannot settle "not applied"
// before the quiet time, nor one behind it only later. Options.CallerClock
// keeps the caller's Now instead, for tests that drive a virtual clock
// (the step script then checks no time). See the package comment, "Time",
// for what the bounds cost.

// readTime queues TIME on p, or nothing with Options.CallerClock.
func (s *Store) readTime(ctx context.Context, p goredis.Pipeliner) *goredis.TimeCmd {
	if s.callerClock {
		return nil
	}
	return p.Time(ctx)
}

// serverTime is the answer of a queued TIME (zero when none was queued).
func serverTime(cmd *goredis.TimeCmd) (time.Time, error) {
	if cmd == nil {
		return time.Time{}, nil
	}
	t, err := cmd.Result()
	if err != nil {
		return time.Time{}, wrap("read time", err)
	}
	if t.IsZero() || t.Unix() <= 0 {
		return time.Time{}, wrap("read time", fmt.Errorf("implausible server time %v", t))
	}
	return t.UTC(), nil
}

// serverClock is a Store's estimate of the server's clock between
// replies: the last TIME a reply carried plus the local monotonic time
// elapsed since it arrived. The estimate lags the server by the reply's
// one-way latency (plus any drift of the two clocks' rates since); the
// step script bounds the difference (StepBehind, StepAhead) and every
// reply resets the estimate.
type serverClock struct {
	mu     sync.Mutex
	server time.Time // zero until a reply carried TIME
	local  time.Time // clock.Real().Now() when it arrived (monotonic)
}

// set records a TIME just received, unless the estimate is already
// later: replies handled out of order (a goroutine descheduled between
// reading its reply and recording it) must not set the estimate back to
// an older reading. Only reset sets it back.
func (c *serverClock) set(server time.Time) {
	local := clock.Real().Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.server.IsZero() && c.server.Add(local.Sub(c.local)).After(server) {
		return
	}
	c.server, c.local = server, local
}

// reset records a TIME just received whatever the estimate: after the
// step script refused a decision's time (an estimate ahead: the two
// clocks' rates drifted, or the server's clock was set back).
func (c *serverClock) reset(server time.Time) {
	local := clock.Real().Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server, c.local = server, local
}

// now is the estimate of the server's clock, to the microsecond (TIME's
// resolution), or false before any TIME arrived.
func (c *serverClock) now() (time.Time, bool) {
	local := clock.Real().Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server.IsZero() {
		return time.Time{}, false
	}
	return c.server.Add(local.Sub(c.local)).Truncate(time.Microsecond), true
}
