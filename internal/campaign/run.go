package campaign

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
)

// Config says what to run.
type Config struct {
	// N is the number of mutations (>= 1).
	N int
	// Seed makes the run reproducible: keys, originals and every mutation.
	Seed uint64
	// Workers is the number of goroutines; 0 means GOMAXPROCS. The counts
	// do not depend on it.
	Workers int
	// Kinds restricts the run to these kinds (all when empty).
	Kinds []string
	// Progress, when set, gets a line every ~5% with count, rate and ETA.
	Progress io.Writer
	// Checker decides acceptance; nil means the fixture's Sidecar.
	Checker Checker
	// Clock times the run for progress and Elapsed; nil means clock.Real().
	Clock clock.Clock
}

// chunk is how many consecutive indices a worker claims at a time.
const chunk = 64

// Run generates cfg.N mutations and checks each. It returns the counts,
// also when ctx ends early (with ctx's error and a Result of what ran).
// Mutation i is of kind i mod len(kinds), drawn from an RNG seeded with
// (Seed, i).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.N < 1 || cfg.Workers < 0 {
		return Result{}, fmt.Errorf("%w: N must be >= 1 and Workers >= 0 (N %d, Workers %d)", ErrBadConfig, cfg.N, cfg.Workers)
	}
	ks, err := selectKinds(cfg.Kinds)
	if err != nil {
		return Result{}, err
	}
	f, err := NewFixture(cfg.Seed)
	if err != nil {
		return Result{}, err
	}
	chk := cfg.Checker
	if chk == nil {
		chk = f.sidecar
	}
	// A checker that refuses the originals would pass any campaign.
	for i, o := range f.originals {
		if err := chk.Check(o.Tuple); err != nil {
			return Result{}, fmt.Errorf("%w: the checker rejects original %d: %w", ErrFixture, i, err)
		}
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real()
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	start := clk.Now()
	pr := &progress{w: cfg.Progress, n: cfg.N, step: max(1, cfg.N/20), clk: clk, start: start}
	var next atomic.Int64
	parts := make([]*tally, workers)
	var wg sync.WaitGroup
	for w := range workers {
		t := newTally(ks)
		parts[w] = t
		wg.Go(func() {
			src := rand.NewPCG(0, 0)
			r := rand.New(src)
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= cfg.N {
					return
				}
				for i := lo; i < min(lo+chunk, cfg.N); i++ {
					src.Seed(cfg.Seed, uint64(i))
					k := i % len(ks)
					t.one(f, chk, ks[k], k, i, r)
					pr.tick()
				}
			}
		})
	}
	wg.Wait()

	res := Result{N: cfg.N, Seed: cfg.Seed, Elapsed: clock.Since(clk, start)}
	total := newTally(ks)
	for _, p := range parts {
		total.merge(p)
	}
	res.Kinds = total.rows
	slices.SortFunc(total.examples, func(a, b Example) int { return a.Index - b.Index })
	perKind := map[string]int{}
	for _, e := range total.examples {
		if perKind[e.Kind] < MaxExamples {
			perKind[e.Kind]++
			res.Examples = append(res.Examples, e)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("campaign: stopped after %d of %d mutations: %w", res.Generated(), cfg.N, err)
	}
	return res, nil
}

// tally is one worker's counts.
type tally struct {
	rows     []KindResult
	examples []Example
}

func newTally(ks []kind) *tally {
	t := &tally{rows: make([]KindResult, len(ks))}
	for i, k := range ks {
		t.rows[i] = KindResult{Name: k.name, Rejected: map[fencegate.Code]int{}, Reasons: map[string]int{}}
	}
	return t
}

// one generates and checks mutation i of kind k and counts the outcome.
func (t *tally) one(f *Fixture, chk Checker, k kind, ki, i int, r *rand.Rand) {
	row := &t.rows[ki]
	row.Generated++
	m, panicked, err := evaluate(f, chk, k, r)
	switch {
	case panicked != nil:
		row.Panicked++
		t.keep(i, k.name, m, fmt.Sprintf("panic: %v", panicked))
	case m.equivalent():
		row.Equivalent++
	case err == nil:
		row.Accepted++
		t.keep(i, k.name, m, "accepted")
	default:
		code, reason := codeOf(err)
		row.Rejected[code]++
		row.Reasons[reason]++
	}
}

func (t *tally) keep(i int, kind string, m mutation, verdict string) {
	// Keep the lowest indices only; the merge keeps MaxExamples per kind.
	n := 0
	for _, e := range t.examples {
		if e.Kind == kind {
			n++
		}
	}
	if n < MaxExamples {
		t.examples = append(t.examples, Example{Index: i, Kind: kind, Variant: m.variant, Tuple: m.Tuple, Verdict: verdict})
	}
}

func (t *tally) merge(o *tally) {
	for i := range t.rows {
		a, b := &t.rows[i], o.rows[i]
		a.Generated += b.Generated
		a.Equivalent += b.Equivalent
		a.Accepted += b.Accepted
		a.Panicked += b.Panicked
		for c, n := range b.Rejected {
			a.Rejected[c] += n
		}
		for c, n := range b.Reasons {
			a.Reasons[c] += n
		}
	}
	t.examples = append(t.examples, o.examples...)
}

// evaluate generates a mutation and checks it. A panic in either is
// returned, never turned into a rejection: a panic on input is a bug.
func evaluate(f *Fixture, chk Checker, k kind, r *rand.Rand) (m mutation, panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	m = k.gen(f, r)
	return m, nil, chk.Check(m.Tuple)
}

// progress prints a line every step mutations.
type progress struct {
	w     io.Writer
	n     int
	step  int
	clk   clock.Clock
	start time.Time
	done  atomic.Int64
	mu    sync.Mutex
}

func (p *progress) tick() {
	d := int(p.done.Add(1))
	if p.w == nil || (d%p.step != 0 && d != p.n) {
		return
	}
	el := clock.Since(p.clk, p.start)
	rate := float64(d) / max(el.Seconds(), 1e-9)
	eta := time.Duration(float64(p.n-d) / rate * float64(time.Second))
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "campaign: %d/%d (%3.0f%%)  %.0f/s  elapsed %s  ETA %s\n",
		d, p.n, 100*float64(d)/float64(p.n), rate, el.Round(time.Second), eta.Round(time.Second))
}
