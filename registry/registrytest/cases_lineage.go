package registrytest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// grantLineage verifies res's grant and returns its lineage claim, failing
// t unless it is present and well formed.
func (e *env) grantLineage(t testing.TB, res registry.Result) string {
	t.Helper()
	g, _ := e.checkResult(t, res)
	if g == nil {
		t.FailNow()
	}
	if err := fencegate.ValidateLineage(g.Lineage); err != nil {
		t.Fatalf("grant of lease %s carries lineage %q: %v", g.Lease, g.Lineage, err)
	}
	return g.Lineage
}

// testLineage: a data set without a lineage (never started with Init) gets
// one with its first grant; every grant carries the meta's lineage; Init,
// another process and a restart never change it.
func testLineage(t *testing.T, e *env) {
	if m := e.meta(t); m.Lineage != "" {
		t.Fatalf("a new data set has lineage %q before any write", m.Lineage)
	}
	first := e.grantLineage(t, e.acquire(t, req("lineage/r1", "owner-a", "ln-1", time.Minute)))
	if m := e.meta(t); m.Lineage != first {
		t.Fatalf("meta lineage %q, the first grant carries %q", m.Lineage, first)
	}
	m, err := e.registry().Init(e.ctx, registry.InitOptions{})
	if err != nil || m.Lineage != first {
		t.Fatalf("Init on a data set with a lineage: %+v %v, want lineage %q kept", m, err, first)
	}
	if got := e.grantLineage(t, e.acquire(t, req("lineage/r2", "owner-a", "ln-2", time.Minute))); got != first {
		t.Errorf("second grant carries %q, the first %q", got, first)
	}
	other := e.otherProcess(t)
	if m, err := other.Init(e.ctx, registry.InitOptions{}); err != nil || m.Lineage != first {
		t.Errorf("a second process's Init: %+v %v, want lineage %q kept", m, err, first)
	}
	if e.opener.NotDurable != "" {
		return
	}
	e.restart(t)
	if m := e.meta(t); m.Lineage != first {
		t.Fatalf("lineage after a restart %q, before %q", m.Lineage, first)
	}
	if m, err := e.registry().Init(e.ctx, registry.InitOptions{}); err != nil || m.Lineage != first {
		t.Fatalf("Init after a restart: %+v %v, want lineage %q kept", m, err, first)
	}
	if got := e.grantLineage(t, e.acquire(t, req("lineage/r3", "owner-a", "ln-3", time.Minute))); got != first {
		t.Errorf("grant after a restart carries %q, before %q", got, first)
	}
}

// testLineageInit: Init on an empty data set writes its lineage, which the
// grants carry; Init's fence floor raises the global floor before anything
// is granted above it, and a lower one (or none) never lowers it, across
// a restart too.
func testLineageInit(t *testing.T, e *env) {
	reg := e.registry
	m, err := reg().Init(e.ctx, registry.InitOptions{FenceFloor: 100})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	if fencegate.ValidateLineage(m.Lineage) != nil || m.FenceFloor != 100 {
		t.Fatalf("Init on an empty data set: %+v, want a lineage and floor 100", m)
	}
	if stored := e.meta(t); stored.Lineage != m.Lineage || stored.FenceFloor != 100 {
		t.Fatalf("stored meta %+v, Init answered %+v", stored, m)
	}
	r1 := e.acquire(t, req("init/r1", "owner-a", "in-1", time.Minute))
	if r1.View.Lease.Fence != 101 || e.grantLineage(t, r1) != m.Lineage {
		t.Errorf("first grant: fence %d lineage %q, want 101 and %q", r1.View.Lease.Fence, r1.View.Lease.Lineage, m.Lineage)
	}
	for _, floor := range []uint64{50, 0, 100} {
		got, err := reg().Init(e.ctx, registry.InitOptions{FenceFloor: floor})
		if err != nil || got.FenceFloor != 100 || got.Lineage != m.Lineage {
			t.Errorf("Init with floor %d: %+v %v, want floor 100 and the lineage kept", floor, got, err)
		}
	}
	if e.opener.NotDurable == "" {
		e.restart(t)
		if got, err := reg().Init(e.ctx, registry.InitOptions{FenceFloor: 7}); err != nil || got.FenceFloor != 100 || got.Lineage != m.Lineage {
			t.Errorf("Init after a restart: %+v %v", got, err)
		}
	}
	if got, err := reg().Init(e.ctx, registry.InitOptions{FenceFloor: 1000}); err != nil || got.FenceFloor != 1000 {
		t.Errorf("Init with a higher floor: %+v %v", got, err)
	}
	r2 := e.acquire(t, req("init/r2", "owner-a", "in-2", time.Minute))
	if r2.View.Lease.Fence != 1001 {
		t.Errorf("grant after the floor was raised to 1000: fence %d", r2.View.Lease.Fence)
	}
}

// testLineageRace: the first writes of an empty data set race, from two
// processes: every grant carries one lineage, the meta's (it is written
// once, never overwritten by a second writer).
func testLineageRace(t *testing.T, e *env) {
	regs := []*registry.Registry{e.registry(), e.otherProcess(t)}
	const perProcess = 8
	var (
		mu       sync.Mutex
		lineages = map[string]int{}
		wg       sync.WaitGroup
	)
	start := make(chan struct{})
	for p, reg := range regs {
		for i := range perProcess {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var (
					res registry.Result
					err error
				)
				if i%4 == 3 {
					_, err = reg.Init(e.ctx, registry.InitOptions{})
				} else {
					res, err = reg.Acquire(e.ctx, req(fmt.Sprintf("race/p%d/r%d", p, i), "owner-a", fmt.Sprintf("lr-%d-%d", p, i), time.Minute))
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("process %d, call %d: %v", p, i, err)
					return
				}
				if res.Grant != nil {
					e.checkResult(t, res)
					lineages[res.View.Lease.Lineage]++
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	m := e.meta(t)
	if len(lineages) != 1 || lineages[m.Lineage] == 0 || fencegate.ValidateLineage(m.Lineage) != nil {
		t.Fatalf("grants carry lineages %v, the meta %q: want one, the meta's", lineages, m.Lineage)
	}
}
