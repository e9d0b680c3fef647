//go:build unix

package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// The crash test re-executes this test binary as a child (a sidecar) that
// hammers the store in a database with Begin/Commit (and unknown →
// resolve) on several resources, reporting on stdout each Begin and Commit
// that returned. The parent kills it with SIGKILL at random moments (its
// connections drop mid-transaction: PostgreSQL rolls those back), opens
// the store again and checks that every reported write survived and that
// no record is half-written.

const (
	crashEnv       = "FENCEGATE_STORE_POSTGRES_CRASH_CHILD"
	crashResources = 4
	crashRounds    = 15
)

// TestHelperProcess is the child of TestCrashSafety; it does nothing in a
// normal run.
func TestHelperProcess(t *testing.T) {
	crashChild(crashtest.Child(t, crashEnv))
}

func crashChild(dsn string) {
	fail, report := crashtest.Fail, crashtest.Report
	s, err := Open(context.Background(), Options{DSN: dsn, Schema: "crash", MaxConns: crashResources})
	if err != nil {
		fail("open: %v", err)
	}
	for i := range crashResources {
		go func() {
			ctx := context.Background()
			res := "crash-" + strconv.Itoa(i)
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for {
				rec, err := s.Record(ctx, res)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					fail("record: %v", err)
				}
				if m := rec.InFlight; m != nil {
					// Left by a killed predecessor: its outcome is unknown.
					if _, err := s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: m.Ref(), Now: time.Now()}); err != nil {
						fail("mark unknown: %v", err)
					}
					resolveOrCommit(ctx, s, rng, m.Ref(), report, fail)
					continue
				}
				fence := rec.HighestFence + 1
				for seq := uint64(1); seq <= 5; seq++ {
					in := storetest.Attempt(res, fence, seq, "payload-"+strconv.Itoa(rng.IntN(1000)))
					in.Now = time.Now()
					in.Deadline = in.Now.Add(time.Minute)
					in.QuietAt = in.Deadline
					r, err := s.Begin(ctx, in)
					if err != nil || r.Decision != store.DecisionProceed {
						fail("begin %s fence %d: %s %s %v", in.Ref().OperationID(), fence, r.Decision, r.Detail, err)
					}
					report("B %s %d %d", res, fence, seq)
					if rng.IntN(6) == 0 {
						if _, err := s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: time.Now()}); err != nil {
							fail("mark unknown: %v", err)
						}
					}
					if !resolveOrCommit(ctx, s, rng, in.Ref(), report, fail) {
						break // not applied: start over from the record
					}
				}
			}
		}()
	}
	select {} // until killed
}

// resolveOrCommit settles a mutation and reports whether it was applied.
func resolveOrCommit(ctx context.Context, s *Store, rng *rand.Rand, ref store.OpRef, report, fail func(string, ...any)) bool {
	rec, err := s.Record(ctx, ref.Resource)
	if err != nil {
		fail("record: %v", err)
	}
	if rec.Unknown() {
		if rng.IntN(2) == 0 {
			// Closed: this test's "backend" has settled the operation for
			// good (the quiet time is the conformance suite's concern).
			if _, err := s.Resolve(ctx, store.ResolveInput{OpRef: ref, Closed: true, Now: time.Now()}); err != nil {
				fail("resolve: %v", err)
			}
			report("N %s %d %d", ref.Resource, ref.Fence, ref.Seq)
			return false
		}
		rr, err := s.Resolve(ctx, store.ResolveInput{OpRef: ref, Applied: true, Response: store.StoredResponse{Status: 200}, Now: time.Now()})
		if err != nil {
			fail("resolve: %v", err)
		}
		report("C %s %d %d %s", ref.Resource, ref.Fence, ref.Seq, rr.Receipt.ID)
		return true
	}
	c := storetest.Answer(ref)
	c.Now = time.Now()
	rc, err := s.Commit(ctx, c)
	if err != nil {
		fail("commit: %v", err)
	}
	report("C %s %d %d %s", ref.Resource, ref.Fence, ref.Seq, rc.ID)
	return true
}

type crashLine struct {
	kind     string // B (begun), C (committed), N (resolved not applied)
	resource string
	fence    uint64
	seq      uint64
	id       string
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := pgtest.Database(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var all []crashLine
	prev := map[string]uint64{}
	midMutation := 0
	for round := range crashRounds {
		lines, started := runCrashChild(t, path, rng)
		all = append(all, lines...)
		inFlight := checkCrashStore(t, path, all, prev)
		if inFlight {
			midMutation++
		}
		t.Logf("round %d: %d reports (child working: %v), killed mid-mutation: %v", round, len(lines), started, inFlight)
	}
	commits := 0
	for _, l := range all {
		if l.kind == "C" {
			commits++
		}
	}
	t.Logf("%d rounds, %d durable commits checked, %d kills left a mutation in flight", crashRounds, commits, midMutation)
	if commits == 0 {
		t.Fatal("the child never committed anything: the test tested nothing")
	}
}

// runCrashChild runs the child on the database at path and kills it at a random moment:
// most rounds after it started working, some early, during Open or its
// first transactions. It returns what it reported.
func runCrashChild(t *testing.T, path string, rng *rand.Rand) ([]crashLine, bool) {
	t.Helper()
	started := rng.IntN(5) > 0
	after := 200 * time.Millisecond
	if !started {
		after = 20 * time.Millisecond
	}
	out, _ := crashtest.Run(t, "TestHelperProcess", []string{crashEnv + "=" + path}, rng, !started, after)
	var lines []crashLine
	for _, o := range out {
		if l, ok := parseCrashLine(o); ok {
			lines = append(lines, l)
		}
	}
	return lines, started
}

func parseCrashLine(s string) (crashLine, bool) {
	f := strings.Fields(s)
	if len(f) < 4 || (f[0] != "B" && f[0] != "C" && f[0] != "N") {
		return crashLine{}, false
	}
	fence, err1 := strconv.ParseUint(f[2], 10, 64)
	seq, err2 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return crashLine{}, false
	}
	l := crashLine{kind: f[0], resource: f[1], fence: fence, seq: seq}
	if l.kind == "C" {
		if len(f) != 5 {
			return crashLine{}, false
		}
		l.id = f[4]
	}
	return l, true
}

// checkCrashStore opens the store and checks it against everything the
// children reported. It reports whether a record still had a mutation in
// flight (the kill landed mid-mutation).
func checkCrashStore(t *testing.T, path string, lines []crashLine, prev map[string]uint64) bool {
	t.Helper()
	s, err := Open(context.Background(), Options{DSN: path, Schema: "crash"})
	if err != nil {
		t.Fatalf("open after SIGKILL: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	begun := map[string]uint64{}
	for _, l := range lines {
		begun[l.resource] = max(begun[l.resource], l.fence)
	}
	inFlight := false
	for i := range crashResources {
		res := "crash-" + strconv.Itoa(i)
		rec, err := s.Record(ctx, res)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if rec.HighestFence < begun[res] {
			t.Fatalf("%s: highest fence %d, but fence %d was begun and reported", res, rec.HighestFence, begun[res])
		}
		if rec.HighestFence < prev[res] {
			t.Fatalf("%s: highest fence went back from %d to %d", res, prev[res], rec.HighestFence)
		}
		prev[res] = rec.HighestFence
		// Before or after, never partial: receipts exist exactly for 1..LastSeq
		// of the highest fence; a marker is the next segment, without receipt.
		for seq := uint64(1); seq <= rec.LastSeq+1; seq++ {
			_, err := s.Receipt(ctx, store.ReceiptKey{Resource: res, Fence: rec.HighestFence, Seq: seq})
			if seq <= rec.LastSeq && err != nil {
				t.Fatalf("%s: lastSeq %d but receipt %d/%d: %v", res, rec.LastSeq, rec.HighestFence, seq, err)
			}
			if seq == rec.LastSeq+1 && rec.HighestFence > 0 && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: receipt %d/%d exists beyond lastSeq %d: %v", res, rec.HighestFence, seq, rec.LastSeq, err)
			}
		}
		if m := rec.InFlight; m != nil {
			inFlight = true
			if m.Fence != rec.HighestFence || m.Seq != rec.LastSeq+1 {
				t.Fatalf("%s: marker %s under highest %d lastSeq %d", res, m.OperationID, rec.HighestFence, rec.LastSeq)
			}
		}
	}
	for _, l := range lines {
		if l.kind != "C" {
			continue
		}
		rc, err := s.Receipt(ctx, store.ReceiptKey{Resource: l.resource, Fence: l.fence, Seq: l.seq})
		if err != nil || rc.ID != l.id {
			t.Fatalf("reported commit %s %d/%d (%s) lost: %+v, %v", l.resource, l.fence, l.seq, l.id, rc, err)
		}
		rec, _ := s.Record(ctx, l.resource)
		if rec.HighestFence == l.fence && rec.LastSeq < l.seq {
			t.Fatalf("reported commit %s %d/%d, but lastSeq is %d", l.resource, l.fence, l.seq, rec.LastSeq)
		}
	}
	return inFlight
}
