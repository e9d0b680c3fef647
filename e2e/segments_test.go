package e2e

import (
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// TestSegmentsOutOfOrderDuplicatedAndResent: one owner's segments through
// the real sidecar. Out of order is SEGMENT_GAP (a new fence not at
// segment 1; a segment other than lastSeq+1); a duplicate, sequential or
// concurrent, is the replay of its receipt (the stored answer,
// Fence-Replayed) and is applied once; a segment resent with another
// payload is SEGMENT_CONFLICT and quarantined. The backend holds exactly
// the accepted segments, in order.
func TestSegmentsOutOfOrderDuplicatedAndResent(t *testing.T) {
	m := startMatrix(t, sidecarOpts{})
	a := m.acquire("worker-a", "s", 30*time.Second, 0)
	path := accountsPath("s")
	w := func(seg, body string) reply { return m.write(of("worker-a", a, path, seg, body)) }

	wantProblem(t, "a new fence's first write at segment 2", w("2", "A2"), fencegate.CodeSegmentGap)
	first := w("1", "A1")
	if wantAccepted(t, "segment 1", first) {
		t.Fatal("segment 1 answered as a replay")
	}
	wantProblem(t, "segment 3 after 1", w("3", "A3"), fencegate.CodeSegmentGap)
	if wantAccepted(t, "segment 2", w("2", "A2")) {
		t.Fatal("segment 2 answered as a replay")
	}

	// Duplicated: the stored answer, the same receipt, applied once.
	dup := w("1", "A1")
	if !wantAccepted(t, "segment 1 again", dup) || dup.Body != first.Body || dup.Header.Get(fencegate.HeaderReceipt) != first.Header.Get(fencegate.HeaderReceipt) {
		t.Fatalf("segment 1 duplicated: %s receipt %q, want the replay of %q with %q", dup, dup.Header.Get(fencegate.HeaderReceipt), first.Body, first.Header.Get(fencegate.HeaderReceipt))
	}

	// Resent with another payload: SEGMENT_CONFLICT, quarantined.
	wantProblem(t, "segment 2 resent with another payload", w("2", "A2-changed"), fencegate.CodeSegmentConflict)
	wantProblem(t, "segment 1 resent with another payload", w("1", "A1-changed"), fencegate.CodeSegmentConflict)
	var q []store.Quarantine
	if !adminGet(t, m.sc.admin, "/v1/quarantine?resource=account/s", &q) || len(q) != 2 {
		t.Fatalf("quarantine lists %d entries, want the 2 conflicting attempts: %+v", len(q), q)
	}

	// Segment 3 sent by several goroutines at once (a retry racing its
	// original): one is forwarded, the others are its replay, or busy
	// while it is in flight and then its replay.
	var wg sync.WaitGroup
	replies := make([]reply, 4)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := w("3", "A3")
				if r.code() == fencegate.CodeResourceBusy {
					continue
				}
				replies[i] = r
				return
			}
		}()
	}
	wg.Wait()
	fresh := 0
	for i, r := range replies {
		if !wantAccepted(t, "concurrent segment 3", r) {
			fresh++
		}
		if r.Header.Get(fencegate.HeaderReceipt) != replies[0].Header.Get(fencegate.HeaderReceipt) {
			t.Fatalf("concurrent segment 3, answer %d: receipt %q, want %q", i, r.Header.Get(fencegate.HeaderReceipt), replies[0].Header.Get(fencegate.HeaderReceipt))
		}
	}
	if fresh != 1 {
		t.Fatalf("concurrent segment 3: %d answers were not replays, want exactly 1", fresh)
	}

	m.back.wantBodies(t, path, "A1", "A2", "A3")
	checkFinalData(t, m.sc.admin, m.back, "s", a.Grant)
}
