//go:build unix

package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/store"
)

// Crash is the crash-safety test of a durable backend: RunCrash
// re-executes the test binary as a child (the backend's TestHelperProcess,
// which calls CrashChild) that hammers the store at Where with
// Begin/Commit (and unknown → resolve) on CrashResources resources,
// reporting on stdout each Begin and Commit that returned. The parent
// kills it with SIGKILL at random moments, opens the store again and
// checks that every reported write survived and that no record is
// half-written.
type Crash struct {
	// Env is the environment variable that makes the test binary the
	// child; its value is Where.
	Env string
	// Where is the store's location (a file, a DSN).
	Where string
	// Open opens the store at where, in the child and in the checks.
	Open func(where string) (store.Store, error)
	// Check, if set, checks the store further after each kill (bolt: the
	// file's own consistency check).
	Check func(t *testing.T, s store.Store)
	// Rounds is how many children are killed; After how long a working
	// child runs before its kill.
	Rounds int
	After  time.Duration
}

// CrashResources is how many resources the child writes, each from its
// own goroutine.
const CrashResources = 4

// CrashChild is the child's work on the store open returns: it never
// returns (the parent kills it).
func CrashChild(open func() (store.Store, error)) {
	fail := crashtest.Fail
	s, err := open()
	if err != nil {
		fail("open: %v", err)
	}
	for i := range CrashResources {
		go crashWorker(s, i)
	}
	select {} // until killed
}

// crashWorker writes resource crash-i: a fence of up to five segments at
// a time, settling whatever a killed predecessor left in flight first.
func crashWorker(s store.Store, i int) {
	fail, report := crashtest.Fail, crashtest.Report
	ctx, now := context.Background(), clock.Real().Now
	res := "crash-" + strconv.Itoa(i)
	rng := rand.New(rand.NewPCG(uint64(now().UnixNano()), uint64(i)))
	for {
		rec, err := s.Record(ctx, res)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			fail("record: %v", err)
		}
		if m := rec.InFlight; m != nil {
			// Left by a killed predecessor: its outcome is unknown.
			if _, err := s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: m.Ref(), Now: now()}); err != nil {
				fail("mark unknown: %v", err)
			}
			resolveOrCommit(ctx, s, rng, m.Ref())
			continue
		}
		fence := rec.HighestFence + 1
		for seq := uint64(1); seq <= 5; seq++ {
			in := Attempt(res, fence, seq, "payload-"+strconv.Itoa(rng.IntN(1000)))
			in.Now = now()
			in.Deadline = in.Now.Add(time.Minute)
			in.QuietAt = in.Deadline
			r, err := s.Begin(ctx, in)
			if err == nil && r.Decision == store.DecisionBusy && seq == 1 {
				// A killed predecessor's Begin of this very fence can
				// commit after it died (its COMMIT had reached the
				// server, pipelined with the writes): its marker is in
				// flight now. Settle it first, as at the top.
				break
			}
			if err != nil || r.Decision != store.DecisionProceed {
				fail("begin %s fence %d: %s %s %v", in.Ref().OperationID(), fence, r.Decision, r.Detail, err)
			}
			report("B %s %d %d", res, fence, seq)
			if rng.IntN(6) == 0 {
				if _, err := s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in.Ref(), Now: now()}); err != nil {
					fail("mark unknown: %v", err)
				}
			}
			if !resolveOrCommit(ctx, s, rng, in.Ref()) {
				break // not applied: start over from the record
			}
		}
	}
}

// resolveOrCommit settles a mutation and reports whether it was applied.
func resolveOrCommit(ctx context.Context, s store.Store, rng *rand.Rand, ref store.OpRef) bool {
	fail, report, now := crashtest.Fail, crashtest.Report, clock.Real().Now
	rec, err := s.Record(ctx, ref.Resource)
	if err != nil {
		fail("record: %v", err)
	}
	if rec.Unknown() {
		if rng.IntN(2) == 0 {
			// Closed: this test's "backend" has settled the operation for
			// good (the quiet time is the conformance suite's concern).
			if _, err := s.Resolve(ctx, store.ResolveInput{OpRef: ref, Closed: true, Now: now()}); err != nil {
				fail("resolve: %v", err)
			}
			report("N %s %d %d", ref.Resource, ref.Fence, ref.Seq)
			return false
		}
		rr, err := s.Resolve(ctx, store.ResolveInput{OpRef: ref, Applied: true, Response: store.StoredResponse{Status: 200}, Now: now()})
		if err != nil {
			fail("resolve: %v", err)
		}
		report("C %s %d %d %s", ref.Resource, ref.Fence, ref.Seq, rr.Receipt.ID)
		return true
	}
	c := Answer(ref)
	c.Now = now()
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

// RunCrash runs c's rounds: a child killed, then the store checked.
func RunCrash(t *testing.T, c Crash) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := uint64(clock.Real().Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var all []crashLine
	prev := map[string]uint64{}
	midMutation := 0
	for round := range c.Rounds {
		lines, started := c.runChild(t, rng)
		all = append(all, lines...)
		inFlight := c.check(t, all, prev)
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
	t.Logf("%d rounds, %d durable commits checked, %d kills left a mutation in flight", c.Rounds, commits, midMutation)
	if commits == 0 {
		t.Fatal("the child never committed anything: the test tested nothing")
	}
}

// runChild runs the child and kills it at a random moment: most rounds
// after it started working, some early, during Open or its first
// transactions. It returns what it reported.
func (c Crash) runChild(t *testing.T, rng *rand.Rand) ([]crashLine, bool) {
	t.Helper()
	started := rng.IntN(5) > 0
	after := c.After
	if !started {
		after = 20 * time.Millisecond
	}
	out, _ := crashtest.Run(t, "TestHelperProcess", []string{c.Env + "=" + c.Where}, rng, !started, after)
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

// check opens the store again and checks it against everything the
// children reported. It reports whether a record still had a mutation in
// flight (the kill landed mid-mutation).
func (c Crash) check(t *testing.T, lines []crashLine, prev map[string]uint64) bool {
	t.Helper()
	s, err := c.Open(c.Where)
	if err != nil {
		t.Fatalf("open after SIGKILL: %v", err)
	}
	defer s.Close()
	if c.Check != nil {
		c.Check(t, s)
	}
	begun := map[string]uint64{}
	for _, l := range lines {
		begun[l.resource] = max(begun[l.resource], l.fence)
	}
	inFlight := false
	for i := range CrashResources {
		if checkCrashRecord(t, s, "crash-"+strconv.Itoa(i), begun, prev) {
			inFlight = true
		}
	}
	checkCrashCommits(t, s, lines)
	return inFlight
}

// checkCrashRecord checks one resource's record: its fence covers every
// Begin reported and never went back; receipts exist exactly for
// 1..LastSeq of the highest fence, and a marker is the next segment,
// without receipt (before or after, never partial). It reports whether a
// mutation is in flight.
func checkCrashRecord(t *testing.T, s store.Store, res string, begun, prev map[string]uint64) bool {
	t.Helper()
	ctx := context.Background()
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
	for seq := uint64(1); seq <= rec.LastSeq+1; seq++ {
		_, err := s.Receipt(ctx, store.ReceiptKey{Resource: res, Fence: rec.HighestFence, Seq: seq})
		if seq <= rec.LastSeq && err != nil {
			t.Fatalf("%s: lastSeq %d but receipt %d/%d: %v", res, rec.LastSeq, rec.HighestFence, seq, err)
		}
		if seq == rec.LastSeq+1 && rec.HighestFence > 0 && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: receipt %d/%d exists beyond lastSeq %d: %v", res, rec.HighestFence, seq, rec.LastSeq, err)
		}
	}
	m := rec.InFlight
	if m != nil && (m.Fence != rec.HighestFence || m.Seq != rec.LastSeq+1) {
		t.Fatalf("%s: marker %s under highest %d lastSeq %d", res, m.OperationID, rec.HighestFence, rec.LastSeq)
	}
	return m != nil
}

// checkCrashCommits checks that every commit a child reported kept its
// receipt, and its record's lastSeq.
func checkCrashCommits(t *testing.T, s store.Store, lines []crashLine) {
	t.Helper()
	ctx := context.Background()
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
}
