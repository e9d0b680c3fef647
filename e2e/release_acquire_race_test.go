package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

// TestReleaseAcquireRace: A releases its lease while it keeps writing
// segments as fast as it can; B acquires in the gap and writes too, both
// at once, over several rounds (each round a new owner takes over from
// the previous one). A's writes may be accepted until its release is
// known (registry mode) or, in proof mode, until B's fence is accepted
// (the early-release window); every write A sends after B's first write
// was accepted is STALE_OWNER. The backend holds exactly the receipts, in
// (fence, segment) order: no write of an old owner after a new owner's.
func TestReleaseAcquireRace(t *testing.T) {
	for _, mode := range []string{"registry", "proof"} {
		t.Run(mode, func(t *testing.T) {
			m := startMatrix(t, sidecarOpts{status: mode, maxAge: "30s"})
			id := "race-" + mode
			path := accountsPath(id)
			ctx := context.Background()
			var grants []string
			prev := m.acquire("worker-0", id, 30*time.Second, 0)
			grants = append(grants, prev.Grant)
			wantAccepted(t, "the first owner's segment 1", m.write(of("worker-0", prev, path, "1", "w0-1")))
			codes := map[fencegate.Code]int{}
			for round := 1; round <= 4; round++ {
				oldOwner, owner := fmt.Sprintf("worker-%d", round-1), fmt.Sprintf("worker-%d", round)
				old := prev
				var bAccepted atomic.Bool
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var mu sync.Mutex
				wg.Add(1)
				go func() { // the old owner keeps writing, whatever happens
					defer wg.Done()
					seg := 2
					for {
						select {
						case <-stop:
							return
						default:
						}
						after := bAccepted.Load()
						r := m.write(of(oldOwner, old, path, fmt.Sprint(seg), fmt.Sprintf("w%d-%d", round-1, seg)))
						mu.Lock()
						codes[r.code()]++
						mu.Unlock()
						switch {
						case r.Err != nil:
							t.Errorf("round %d: the old owner's write got no answer: %v", round, r.Err)
							return
						case after && r.code() != fencegate.CodeStaleOwner:
							t.Errorf("round %d: the old owner's segment %d sent after the new owner's write was accepted: %s, want STALE_OWNER", round, seg, r)
							return
						case r.Status == 200:
							seg++
						case r.code() == fencegate.CodeStaleOwner:
							return // superseded for good
						case r.code() == fencegate.CodeGrantNotHeld && mode == "registry", r.code() == fencegate.CodeResourceBusy:
						default:
							t.Errorf("round %d: the old owner's segment %d: %s", round, seg, r)
							return
						}
					}
				}()
				if _, err := registryClient(t, m.reg.url, oldOwner).Release(ctx, old.Lease); err != nil {
					t.Fatal(err)
				}
				l := m.acquire(owner, id, 30*time.Second, 5*time.Second)
				grants = append(grants, l.Grant)
				for seg := 1; seg <= 3; seg++ {
					for {
						r := m.write(of(owner, l, path, fmt.Sprint(seg), fmt.Sprintf("w%d-%d", round, seg)))
						if r.code() == fencegate.CodeResourceBusy {
							continue // the old owner's write is in flight
						}
						wantAccepted(t, fmt.Sprintf("round %d: the new owner's segment %d", round, seg), r)
						break
					}
					bAccepted.Store(true)
				}
				close(stop)
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
				prev = l
			}
			t.Logf("old owners' answers: %v", codes)
			rs := checkFinalData(t, m.sc.admin, m.back, id, grants...)
			if len(rs) < 1+4*3 {
				t.Fatalf("%d receipts, want every new owner's 3 segments and the first write", len(rs))
			}
		})
	}
}
