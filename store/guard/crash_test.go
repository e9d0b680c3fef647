//go:build unix

package guard_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// The crash test re-executes this test binary as a child that runs a guard
// (over a durable store/bolt store, so the state survives the child) under
// load on several resources, reporting on stdout every Begin that
// PROCEEDed, every Commit (or applied Resolve) and every MarkUnknown that
// returned. The parent kills it with SIGKILL at random moments, while it
// is checkpointing, and checks that the checkpoint file covers everything
// the child reported, then starts the next child on the same files (whose
// guard must find nothing lost: any refusal fails the test).

const (
	crashEnv       = "FENCEGATE_STORE_GUARD_CRASH_CHILD"
	crashResources = 8
	crashRounds    = 20
)

// TestHelperProcess is the child of TestCrashKeepsCheckpoints; it does
// nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	crashChild(crashtest.Child(t, crashEnv))
}

func crashChild(dir string) {
	fail, report := crashtest.Fail, crashtest.Report
	inner, err := bolt.Open(filepath.Join(dir, "inner.db"), bolt.Options{})
	if err != nil {
		fail("open inner: %v", err)
	}
	g, err := guard.Wrap(inner, filepath.Join(dir, "cp.db"))
	if err != nil {
		fail("wrap: %v", err)
	}
	ctx := context.Background()
	settle := func(ref store.OpRef, unknown bool) {
		if !unknown {
			if _, err := g.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: ref, Now: time.Now()}); err != nil {
				fail("mark unknown %s: %v", ref.OperationID(), err)
			}
			report("U %s %d %d", ref.Resource, ref.Fence, ref.Seq)
		}
		if _, err := g.Resolve(ctx, store.ResolveInput{OpRef: ref, Applied: true, Response: store.StoredResponse{Status: 200}, Now: time.Now()}); err != nil {
			fail("resolve %s: %v", ref.OperationID(), err)
		}
		report("C %s %d %d", ref.Resource, ref.Fence, ref.Seq)
	}
	for i := range crashResources {
		go func() {
			res := "crash-" + strconv.Itoa(i)
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for {
				rec, err := g.Record(ctx, res)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					fail("record: %v", err)
				}
				if m := rec.InFlight; m != nil {
					// Left by a killed predecessor: its outcome is unknown.
					settle(m.Ref(), rec.Unknown())
					continue
				}
				fence := rec.HighestFence + 1
				for seq := uint64(1); seq <= 5; seq++ {
					in := storetest.Attempt(res, fence, seq, "payload-"+strconv.Itoa(rng.IntN(1000)))
					in.Now = time.Now()
					in.Deadline = in.Now.Add(time.Minute)
					in.QuietAt = in.Deadline
					r, err := g.Begin(ctx, in)
					if err != nil || r.Decision != store.DecisionProceed {
						fail("begin %s fence %d: %s %s %v", in.Ref().OperationID(), fence, r.Decision, r.Detail, err)
					}
					report("B %s %d %d", res, fence, seq)
					if rng.IntN(6) == 0 {
						settle(in.Ref(), false)
						continue
					}
					c := storetest.Answer(in.Ref())
					c.Now = time.Now()
					if _, err := g.Commit(ctx, c); err != nil {
						fail("commit: %v", err)
					}
					report("C %s %d %d", res, fence, seq)
				}
			}
		}()
	}
	select {} // until killed
}

type crashLine struct {
	kind       string // B (PROCEED), C (committed), U (declared unknown)
	resource   string
	fence, seq uint64
}

func TestCrashKeepsCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var all []crashLine
	for round := range crashRounds {
		lines := runCrashChild(t, dir, rng)
		all = append(all, lines...)
		checkCheckpoints(t, dir, all)
		t.Logf("round %d: %d reports", round, len(lines))
	}
	if len(all) == 0 {
		t.Fatal("the child never reported anything: the test tested nothing")
	}
}

// runCrashChild starts the child, kills it with SIGKILL after a random
// while of work and returns what it reported.
func runCrashChild(t *testing.T, dir string, rng *rand.Rand) []crashLine {
	t.Helper()
	out, _ := crashtest.Run(t, "TestHelperProcess", []string{crashEnv + "=" + dir}, rng, false, 80*time.Millisecond)
	var lines []crashLine
	for _, o := range out {
		f := strings.Fields(o)
		if len(f) != 4 {
			continue
		}
		fence, err1 := strconv.ParseUint(f[2], 10, 64)
		seq, err2 := strconv.ParseUint(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		lines = append(lines, crashLine{kind: f[0], resource: f[1], fence: fence, seq: seq})
	}
	return lines
}

// checkCheckpoints opens the checkpoint file as the next sidecar would and
// checks it covers every report: the fence of every PROCEED, the segment
// of every commit, and an UNKNOWN reported last for a resource (still
// outstanding, or settled).
func checkCheckpoints(t *testing.T, dir string, lines []crashLine) {
	t.Helper()
	path := filepath.Join(dir, "cp.db")
	g, err := guard.Wrap(memory.New(memory.Options{}), path)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	last := map[string]crashLine{}
	for _, l := range lines {
		c, ok := g.Checkpoint(l.resource)
		switch l.kind {
		case "B":
			if !ok || c.Fence < l.fence {
				t.Fatalf("PROCEED %s fence %d seq %d reported, checkpoint %+v %v", l.resource, l.fence, l.seq, c, ok)
			}
		case "C":
			if !ok || c.Fence < l.fence || (c.Fence == l.fence && c.Seq < l.seq) {
				t.Fatalf("commit %s fence %d seq %d reported, checkpoint %+v %v", l.resource, l.fence, l.seq, c, ok)
			}
		}
		last[l.resource] = l
	}
	for r, l := range last {
		// The child may have resolved it and died before reporting: the
		// checkpoint then shows it settled.
		c, _ := g.Checkpoint(r)
		held := c.UnknownFence == l.fence && c.UnknownSeq == l.seq
		settled := c.Fence > l.fence || (c.Fence == l.fence && c.Seq >= l.seq)
		if l.kind == "U" && !held && !settled {
			t.Fatalf("UNKNOWN %s fence %d seq %d reported last, checkpoint %+v", r, l.fence, l.seq, c)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("bbolt consistency check: %v", err)
	}
}
