package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// linOp is the input of one recorded operation.
type linOp struct {
	Kind    string // begin, commit, markUnknown, abort, resolve, resume
	Begin   store.BeginInput
	Ref     store.OpRef
	Applied bool
	Closed  bool // resolve: the evidence of "not applied" closes the operation
}

func (o linOp) resource() string {
	if o.Kind == "begin" {
		return o.Begin.Resource
	}
	return o.Ref.Resource
}

// linModel is the reference model as a porcupine model, partitioned by
// resource.
var linModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			r := op.Input.(linOp).resource()
			if _, ok := by[r]; !ok {
				order = append(order, r)
			}
			by[r] = append(by[r], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, r := range order {
			out = append(out, by[r])
		}
		return out
	},
	Init: func() any { return mState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(mState), input.(linOp), output.(mOut)
		var next mState
		var want mOut
		switch in.Kind {
		case "begin":
			next, want = s.begin(in.Begin)
		case "commit":
			next, want = s.commit(in.Ref)
		case "markUnknown":
			next, want = s.markUnknown(in.Ref)
		case "abort":
			next, want = s.abort(in.Ref)
		case "resolve":
			next, want = s.resolve(store.ResolveInput{OpRef: in.Ref, Applied: in.Applied, Closed: in.Closed, Now: T0})
		case "resume":
			next, want = s.resume()
		default:
			return false, s
		}
		return want == out, next
	},
	Equal: func(a, b any) bool { return reflect.DeepEqual(a, b) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linOp), output.(mOut)
		if in.Kind == "begin" {
			return fmt.Sprintf("begin(%d %s/%d) -> %+v", in.Begin.Fence, in.Begin.Root, in.Begin.Seq, out)
		}
		return fmt.Sprintf("%s(%d %s) -> %+v", in.Kind, in.Ref.Fence, in.Ref.OperationID(), out)
	},
}

// runLinearizable records concurrent histories of several clients per
// resource and checks them with porcupine against the reference model.
func runLinearizable(t *testing.T, newStore Factory) {
	t.Run("ModelRejectsDoubleProceed", func(t *testing.T) {
		// The check can fail: two sequential PROCEEDs on one resource.
		a := Attempt("x", 1, 1, "a")
		b := Attempt("x", 2, 1, "b")
		h := []porcupine.Operation{
			{ClientId: 0, Input: linOp{Kind: "begin", Begin: a}, Output: mOut{Decision: store.DecisionProceed, Op: "root-1/1"}, Call: 1, Return: 2},
			{ClientId: 1, Input: linOp{Kind: "begin", Begin: b}, Output: mOut{Decision: store.DecisionProceed, Op: "root-2/1"}, Call: 3, Return: 4},
		}
		if porcupine.CheckOperations(linModel, h) {
			t.Fatal("porcupine accepted two PROCEEDs in a row")
		}
	})
	const resources, clients, opsPerClient = 3, 4, 100
	s := newStore(t)
	var clock atomic.Int64
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for r := range resources {
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := &linClient{
					s: s, id: r*clients + c, resource: "lin-" + strconv.Itoa(r),
					rng:   rand.New(rand.NewPCG(uint64(r), uint64(c))),
					clock: &clock,
				}
				for range opsPerClient {
					cl.step()
				}
				mu.Lock()
				history = append(history, cl.history...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	seen := map[string]int{}
	for _, op := range history {
		o := op.Output.(mOut)
		if strings.HasPrefix(o.Class, "error:") {
			t.Fatalf("unexpected store error in %+v: %s", op.Input, o.Class)
		}
		seen[op.Input.(linOp).Kind+":"+string(o.Decision)+o.Class]++
	}
	t.Logf("%d operations: %v", len(history), seen)
	res, info := porcupine.CheckOperationsVerbose(linModel, history, 30*time.Second)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(t.TempDir(), "history.html")
		if err := porcupine.VisualizePath(linModel, info, path); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Fatalf("history of %d operations is not linearizable (visualization: %s)", len(history), path)
	default:
		t.Fatalf("linearizability check of %d operations timed out", len(history))
	}
}

type linClient struct {
	s        store.Store
	id       int
	resource string
	rng      *rand.Rand
	clock    *atomic.Int64
	history  []porcupine.Operation

	last    store.Record      // the record as of this client's last Begin
	settle  []store.OpRef     // mutations to end: own PROCEEDs
	resolve []store.OpRef     // mutations declared or seen unknown
	retry   *store.BeginInput // an exact retry of an unknown mutation
}

func (c *linClient) record(in linOp, f func() mOut) mOut {
	call := c.clock.Add(1)
	out := f()
	ret := c.clock.Add(1)
	c.history = append(c.history, porcupine.Operation{ClientId: c.id, Input: in, Output: out, Call: call, Return: ret})
	return out
}

func (c *linClient) step() {
	ctx := context.Background()
	switch {
	case len(c.settle) > 0 && c.rng.IntN(4) > 0:
		ref := c.settle[0]
		c.settle = c.settle[1:]
		c.end(ctx, ref)
		return
	case len(c.resolve) > 0 && c.rng.IntN(2) > 0:
		ref := c.resolve[0]
		c.resolve = c.resolve[1:]
		c.reconcile(ctx, ref)
		return
	case c.last.Pause != nil && c.rng.IntN(3) == 0:
		c.record(linOp{Kind: "resume", Ref: store.OpRef{Resource: c.resource}}, func() mOut {
			_, err := c.s.Resume(ctx, c.resource)
			return mOut{Class: classOf(err)}
		})
		c.last.Pause = nil
		return
	}
	in := c.attempt()
	var got store.BeginResult
	out := c.record(linOp{Kind: "begin", Begin: in}, func() mOut {
		var err error
		got, err = c.s.Begin(ctx, in)
		if err != nil {
			return mOut{Class: "error: " + err.Error()}
		}
		return beginOut(got)
	})
	c.last = got.Record
	switch out.Decision {
	case store.DecisionProceed:
		c.settle = append(c.settle, in.Ref())
	case store.DecisionBusy:
		// Wait a little for the owner to finish, as a proxy would.
		clock.Sleep(clock.Real(), time.Duration(c.rng.IntN(500))*time.Microsecond, nil)
	case store.DecisionMutationUnknown:
		m := got.Mutation
		if c.rng.IntN(2) == 0 {
			c.resolve = append(c.resolve, m.Ref())
		} else {
			retry := Attempt(m.Resource, m.Fence, m.Seq, "")
			retry.Root, retry.PayloadDigest, retry.RetryUnknown = m.Root, m.PayloadDigest, true
			retry.Deadline = T0.Add(time.Hour)
			c.retry = &retry
		}
	}
}

// attempt draws the next Begin around what the client last saw: the current
// owner's next segment, a takeover, a stale or repeated segment.
func (c *linClient) attempt() store.BeginInput {
	if c.retry != nil {
		in := *c.retry
		c.retry = nil
		return in
	}
	fence := c.last.HighestFence + uint64(c.rng.IntN(3))
	if fence > 1 && c.rng.IntN(4) == 0 {
		fence--
	}
	fence = max(fence, 1)
	seq := uint64(1)
	if fence == c.last.HighestFence {
		seq = c.last.LastSeq + 1
		if c.rng.IntN(3) == 0 {
			seq = uint64(1 + c.rng.IntN(int(c.last.LastSeq)+2))
		}
	}
	in := Attempt(c.resource, fence, seq, []string{"a", "a", "b"}[c.rng.IntN(3)])
	in.Deadline = T0.Add(time.Hour)
	if c.rng.IntN(40) == 0 {
		in.Evidence.IssuerEpoch = 2
	}
	if c.rng.IntN(40) == 0 {
		in.Root = "reissued" // the same fence under another grant
	}
	return in
}

// end finishes a mutation the client began: commit, abort, or declare the
// outcome unknown (to resolve later).
func (c *linClient) end(ctx context.Context, ref store.OpRef) {
	switch n := c.rng.IntN(10); {
	case n < 6:
		c.record(linOp{Kind: "commit", Ref: ref}, func() mOut {
			rc, err := c.s.Commit(ctx, Answer(ref))
			return mOut{Class: classOf(err), ID: rc.ID}
		})
	case n < 8:
		c.record(linOp{Kind: "abort", Ref: ref}, func() mOut {
			_, err := c.s.Abort(ctx, store.AbortInput{OpRef: ref, Now: T0})
			return mOut{Class: classOf(err)}
		})
	default:
		c.record(linOp{Kind: "markUnknown", Ref: ref}, func() mOut {
			_, err := c.s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: ref, Now: T0})
			return mOut{Class: classOf(err)}
		})
		c.resolve = append(c.resolve, ref)
	}
}

// reconcile resolves an unknown mutation, as applied or not. Every
// operation happens at T0, before any mutation is quiet: "not applied" is
// settled only on evidence that closes the operation, and refused
// (not-quiet) otherwise.
func (c *linClient) reconcile(ctx context.Context, ref store.OpRef) {
	applied := c.rng.IntN(2) == 0
	closed := !applied && c.rng.IntN(3) > 0
	c.record(linOp{Kind: "resolve", Ref: ref, Applied: applied, Closed: closed}, func() mOut {
		in := store.ResolveInput{OpRef: ref, Applied: applied, Closed: closed, Now: T0}
		if applied {
			in.Response = store.StoredResponse{Status: 200}
		}
		rr, err := c.s.Resolve(ctx, in)
		out := mOut{Class: classOf(err)}
		if rr.Receipt != nil {
			out.ID = rr.Receipt.ID
		}
		return out
	})
}
