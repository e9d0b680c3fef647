package guard

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// Concurrent Begins of 64 resources share the checkpoint file's
// transactions (and fsyncs): while one transaction runs, the 64 changes
// that queue behind it are committed together in the next one.
func TestConcurrentBeginsShareCommits(t *testing.T) {
	g, err := Wrap(memory.New(memory.Options{}), filepath.Join(t.TempDir(), "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocked := make(chan error, 1)
	go func() {
		blocked <- g.d.group.Do(func(*bbolt.Tx) error {
			once.Do(func() { close(entered) })
			<-release
			return nil
		})
	}()
	<-entered
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a failed test must not leave the committer blocked
		}
	}()
	before := g.Counters()
	// One resource per stripe: calls of one stripe are serialised by
	// design, so only distinct stripes can queue together.
	const n = nStripes
	names := make([]string, 0, n)
	seen := map[uint32]bool{}
	for i := 0; len(names) < n; i++ {
		r := "r" + strconv.Itoa(i)
		if s := stripe(r); !seen[s] {
			seen[s] = true
			names = append(names, r)
		}
	}
	var wg sync.WaitGroup
	results := make([]store.BeginResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = g.Begin(context.Background(), storetest.Attempt(names[i], 1, 1, "a"))
		}()
	}
	waitQueued(t, g, n)
	close(release)
	wg.Wait()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil || results[i].Decision != store.DecisionProceed {
			t.Fatalf("Begin %d: %s %v", i, results[i].Decision, errs[i])
		}
		if c, ok := g.Checkpoint(names[i]); !ok || c.Fence != 1 {
			t.Fatalf("checkpoint %d after PROCEED: %+v %v", i, c, ok)
		}
	}
	d := g.Counters()
	if w, tx := d.Writes-before.Writes, d.TxCommits-before.TxCommits; w != uint64(n)+1 || tx != 2 {
		t.Fatalf("%d checkpoint writes in %d transactions; want %d in 2 (the blocker's and one group)", w, tx, n+1)
	}
}

// waitQueued waits until n writes wait for the (blocked) committer.
func waitQueued(t *testing.T, g *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for g.d.group.Queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes queued", g.d.group.Queued(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A stored checkpoint decodes to itself; anything else is ErrCorrupt,
// never a panic.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(Checkpoint{Fence: 5, Seq: 2, UnknownFence: 5, UnknownSeq: 3, SawPause: true, Touched: 9}.encode())
	f.Add([]byte{})
	f.Add([]byte("{not json"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		if got := c.encode(); string(got) != string(b) {
			t.Fatalf("decode(%x) = %+v encodes to %x", b, c, got)
		}
	})
}
