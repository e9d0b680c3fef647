package redis

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

var diffSeed = flag.Uint64("redis.diffseed", 0, "seed of TestDifferentialHistories (0: a random one, logged)")

// The differential test's size: histories of diffSteps calls each.
const (
	diffHistories = 6
	diffSteps     = 400
	diffReplicas  = 3
	diffResources = 3
)

// TestDifferentialHistories drives random histories into several Store
// instances over one Redis server (replicas, each with its own client and
// its own cache) and, call by call with the same inputs at the same
// virtual times (Options.CallerClock), into store/memory, and compares
// every call's result and error and, at the end, every record, receipt
// and quarantine entry. Calls go to a random replica, so one replica
// writes a resource and another then decides on its stale cache: the
// step script must catch that every time, or the answers part.
func TestDifferentialHistories(t *testing.T) {
	srv := redistest.Start(t)
	seed := *diffSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -redis.diffseed=%d)", seed, seed)
	for h := range diffHistories {
		t.Run("history"+strconv.Itoa(h), func(t *testing.T) {
			d := newDiff(t, srv, seed+uint64(h))
			for step := range diffSteps {
				d.step(t, step)
			}
			d.compareState(t)
			var retried int64
			for _, s := range d.replicas {
				retried += s.retried.Load()
			}
			if retried == 0 {
				t.Errorf("the step script never refused a decision: no replica decided on a stale cache, the history tests nothing")
			}
			t.Logf("seed %d: %d calls, %d on another replica than the resource's last, %d steps refused and run again; outcomes %v",
				seed+uint64(h), diffSteps, d.stale, retried, d.seen)
		})
	}
}

// diff is one history: the replicas, the reference, and what the history
// drew so far.
type diff struct {
	seed     uint64
	rnd      *rand.Rand
	replicas []*Store
	ref      store.Store
	now      time.Time
	// per resource: the highest fence drawn, the last ref begun, and the
	// replica that wrote it last.
	highest []uint64
	last    []store.OpRef
	writer  []int
	stale   int
	seen    map[string]int // outcome classes, for the log
}

func newDiff(t *testing.T, srv *redistest.Server, seed uint64) *diff {
	prefix := "diff" + strconv.FormatInt(prefixes.Add(1), 10)
	d := &diff{seed: seed, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: storetest.T0,
		highest: make([]uint64, diffResources), last: make([]store.OpRef, diffResources), writer: make([]int, diffResources), seen: map[string]int{}}
	for range diffReplicas {
		d.replicas = append(d.replicas, openPrefix(t, srv, prefix))
	}
	d.ref = memory.New(memory.Options{})
	t.Cleanup(func() { _ = d.ref.Close() })
	return d
}

func (d *diff) resource(i int) string { return "diff/r" + strconv.Itoa(i) }

// opRef draws an operation of resource i: most often the mutation in
// flight (as the reference holds it), else the last one begun, else any.
func (d *diff) opRef(i int) store.OpRef {
	rec, _ := d.ref.Record(context.Background(), d.resource(i))
	switch k := d.rnd.IntN(6); {
	case k < 4 && rec.InFlight != nil:
		return rec.InFlight.Ref()
	case k < 5 && d.last[i].Resource != "":
		return d.last[i]
	}
	fence := 1 + d.rnd.Uint64N(d.highest[i]+1)
	return store.OpRef{Resource: d.resource(i), Fence: fence, Root: storetest.Root(fence), Seq: 1 + d.rnd.Uint64N(4)}
}

// step draws one call and runs it on a random replica and on the
// reference.
func (d *diff) step(t *testing.T, step int) {
	i := d.rnd.IntN(diffResources)
	r := d.rnd.IntN(diffReplicas)
	if d.writer[i] != r {
		d.stale++
	}
	d.writer[i] = r
	s := d.replicas[r]
	d.now = d.now.Add(time.Duration(d.rnd.IntN(4000)) * time.Millisecond)
	if d.rnd.IntN(40) == 0 {
		d.now = d.now.Add(2 * time.Minute) // markers expire, receipts age
	}
	name, got, want := d.call(s, i)
	d.seen[classOf(name, want)]++
	if got != want {
		t.Fatalf("seed %d step %d: %s on replica %d:\n redis:  %s\n memory: %s", d.seed, step, name, r, got, want)
	}
}

// call runs one drawn call on s and on the reference, and returns its
// name and both outcomes (result and error class, as JSON).
func (d *diff) call(s *Store, i int) (string, string, string) {
	ctx := context.Background()
	switch k := d.rnd.IntN(40); {
	case k < 16:
		in := d.attempt(i)
		return "begin " + in.Ref().OperationID() + " " + in.PayloadDigest[:12], outcome(s.Begin(ctx, in)), outcome(d.ref.Begin(ctx, in))
	case k < 28:
		in := storetest.Answer(d.opRef(i))
		in.Now = d.now
		in.KeepReceipts = []int{0, 0, 1, 2, 3}[d.rnd.IntN(5)]
		return "commit " + in.OperationID(), outcome(s.Commit(ctx, in)), outcome(d.ref.Commit(ctx, in))
	case k < 31:
		in := store.MarkUnknownInput{OpRef: d.opRef(i), Now: d.now}
		return "mark unknown " + in.OperationID(), outcome(s.MarkUnknown(ctx, in)), outcome(d.ref.MarkUnknown(ctx, in))
	case k < 33:
		in := store.AbortInput{OpRef: d.opRef(i), Now: d.now}
		return "abort " + in.OperationID(), outcome(s.Abort(ctx, in)), outcome(d.ref.Abort(ctx, in))
	case k < 36:
		in := d.resolve(i)
		return fmt.Sprintf("resolve %s applied=%v", in.OperationID(), in.Applied), outcome(s.Resolve(ctx, in)), outcome(d.ref.Resolve(ctx, in))
	case k < 37:
		in := store.PauseInput{Resource: d.resource(i), Reason: store.PauseOperator, Detail: "diff", Now: d.now}
		return "pause", outcome(s.Pause(ctx, in)), outcome(d.ref.Pause(ctx, in))
	case k < 39:
		return "resume", outcome(s.Resume(ctx, d.resource(i))), outcome(d.ref.Resume(ctx, d.resource(i)))
	default:
		in := store.CompactInput{Now: d.now, MaxAge: time.Duration(1+d.rnd.IntN(5)) * time.Minute, MaxPerResource: d.rnd.IntN(4), MaxDeletes: 100}
		return "compact", outcome(s.Compact(ctx, in)), outcome(d.ref.Compact(ctx, in))
	}
}

// attempt draws a Begin on resource i: the next segment of the highest
// fence, a new fence, the last segment again (a replay when the payload
// matches), the mutation in flight again, or any other, with one of two
// payloads, at the current virtual time.
func (d *diff) attempt(i int) store.BeginInput {
	rec, _ := d.ref.Record(context.Background(), d.resource(i))
	ref := store.OpRef{Resource: d.resource(i), Fence: max(rec.HighestFence, 1), Seq: rec.LastSeq + 1}
	switch k := d.rnd.IntN(20); {
	case k < 3:
		ref.Fence, ref.Seq = d.highest[i]+1, 1
	case k < 6:
		ref.Seq = max(rec.LastSeq, 1)
	case k < 8 && rec.InFlight != nil:
		ref = rec.InFlight.Ref()
	case k < 11:
		ref = d.opRef(i)
	}
	ref.Root = storetest.Root(ref.Fence)
	d.highest[i] = max(d.highest[i], ref.Fence)
	in := storetest.Attempt(ref.Resource, ref.Fence, ref.Seq, []string{"a", "b"}[d.rnd.IntN(2)])
	in.Now, in.Deadline, in.QuietAt = d.now, d.now.Add(time.Minute), d.now.Add(2*time.Minute)
	in.RetryUnknown = d.rnd.IntN(3) == 0
	d.last[i] = in.Ref()
	return in
}

func (d *diff) resolve(i int) store.ResolveInput {
	in := store.ResolveInput{OpRef: d.opRef(i), Applied: d.rnd.IntN(2) == 0, Now: d.now}
	if in.Applied {
		in.BackendStatus = 200
		in.Response = store.StoredResponse{Body: []byte("resolved")}
	} else {
		in.EvidenceAge = time.Duration(d.rnd.IntN(30)) * time.Second
	}
	return in
}

// compareState compares what every resource holds on each replica and on
// the reference: records, receipts, quarantine entries, the listings.
func (d *diff) compareState(t *testing.T) {
	ctx := context.Background()
	want := snapshotOf(ctx, d.ref)
	for r, s := range d.replicas {
		if got := snapshotOf(ctx, s); got != want {
			t.Errorf("seed %d: replica %d ends with\n%s\nthe reference with\n%s", d.seed, r, got, want)
		}
	}
}

// snapshotOf is everything the test's resources hold, as JSON.
func snapshotOf(ctx context.Context, s store.Store) string {
	var out []string
	for i := range diffResources {
		res := "diff/r" + strconv.Itoa(i)
		out = append(out, outcome(s.Record(ctx, res)))
		out = append(out, outcome(s.ReceiptsOf(ctx, store.ReceiptsQuery{Resource: res, Limit: store.MaxReceiptsLimit})))
		out = append(out, outcome(s.ListQuarantined(ctx, res)))
	}
	out = append(out, outcome(s.ListPaused(ctx)))
	out = append(out, outcome(s.ListUnknown(ctx, storetest.T0.Add(1000*time.Hour))))
	b, _ := json.MarshalIndent(out, "", " ")
	return string(b)
}

// outcome is a call's result and the store sentinel its error wraps, as
// one comparable string.
func outcome[R any](res R, err error) string {
	b, jerr := json.Marshal(res)
	if jerr != nil {
		return "unencodable result: " + jerr.Error()
	}
	return errClass(err) + " " + string(b)
}

// classOf is a call's kind and outcome class, for the log: its decision
// or its error.
func classOf(name, out string) string {
	kind, _, _ := strings.Cut(name, " ")
	var r struct{ Decision string }
	_, body, _ := strings.Cut(out, "{")
	if json.Unmarshal([]byte("{"+body), &r) == nil && r.Decision != "" {
		return kind + ":" + r.Decision
	}
	if class, _, _ := strings.Cut(out, " "); class != "" {
		return kind + ":" + class
	}
	return kind
}

// errClass names the store sentinel err wraps ("" for none, "other" for
// an error that wraps none: never expected here).
func errClass(err error) string {
	if err == nil {
		return ""
	}
	var nq *store.NotQuietError
	if errors.As(err, &nq) {
		return "NOT_QUIET"
	}
	for _, s := range []struct {
		err  error
		name string
	}{{store.ErrNotInFlight, "NotInFlight"}, {store.ErrConflict, "Conflict"}, {store.ErrOutcomeUnknown, "OutcomeUnknown"},
		{store.ErrNotFound, "NotFound"}, {store.ErrInvalidInput, "InvalidInput"}, {store.ErrCorrupt, "Corrupt"},
		{store.ErrClosed, "Closed"}, {store.ErrNotQuiet, "NotQuiet"}, {store.ErrStillInFlight, "StillInFlight"},
		{store.ErrNotPaused, "NotPaused"}, {store.ErrKeyInUse, "KeyInUse"}} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "other: " + err.Error()
}
