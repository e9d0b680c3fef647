package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// runStateful drives random operation sequences against a fresh store and
// the reference model, and compares every answer and, after every step,
// every record, the quarantine and the unknown listing.
func runStateful(t *testing.T, newStore Factory, rounds int) {
	seen := map[string]int{}
	defer func() { t.Logf("outcomes seen: %v", seen) }()
	for round := range rounds {
		t.Run("round"+strconv.Itoa(round), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				s := newStore(t)
				defer s.Close()
				m := &machine{s: s, ctx: context.Background(), now: T0, prefix: "stateful/", seen: seen}
				m.run(rt)
			})
		})
	}
}

const machineResources = 2

type machine struct {
	s      store.Store
	ctx    context.Context
	now    time.Time
	prefix string
	model  [machineResources]mState
	seen   map[string]int // outcome counts, for the log
}

func (m *machine) resource(i int) string { return m.prefix + "r" + strconv.Itoa(i) }

func (m *machine) run(t *rapid.T) {
	t.Repeat(map[string]func(*rapid.T){
		"begin":       m.begin,
		"commit":      m.commit,
		"markUnknown": m.markUnknown,
		"abort":       m.abort,
		"resolve":     m.resolve,
		"pause":       m.pause,
		"resume":      m.resume,
		"repair":      m.repair,
		"tick":        m.tick,
		"":            m.checkAll,
	})
}

// ref draws an operation reference: most often the mutation in flight.
func (m *machine) ref(t *rapid.T, i int) store.OpRef {
	st := m.model[i]
	if st.inflight != nil && rapid.IntRange(0, 4).Draw(t, "useInFlight") > 0 {
		f := st.inflight
		return store.OpRef{Resource: m.resource(i), Fence: f.fence, Root: f.root, Seq: f.seq}
	}
	fence := rapid.Uint64Range(1, st.highest+1).Draw(t, "fence")
	return store.OpRef{Resource: m.resource(i), Fence: fence, Root: Root(fence), Seq: rapid.Uint64Range(1, st.lastSeq+2).Draw(t, "seq")}
}

func (m *machine) begin(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	st := m.model[i]
	lo := uint64(1)
	if st.highest > 2 {
		lo = st.highest - 2
	}
	fence := rapid.Uint64Range(lo, st.highest+2).Draw(t, "fence")
	seq := rapid.Uint64Range(1, st.lastSeq+2).Draw(t, "seq")
	if fence != st.highest && rapid.Bool().Draw(t, "seqOne") {
		seq = 1
	}
	in := Attempt(m.resource(i), fence, seq, rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "payload"))
	if rapid.IntRange(0, 9).Draw(t, "otherRoot") == 0 {
		in.Root = "other"
	}
	in.Evidence = store.Evidence{
		IssuerEpoch:     rapid.SampledFrom([]uint64{1, 1, 1, 1, 2}).Draw(t, "epoch"),
		BackendRevision: 10*fence + rapid.Uint64Range(0, 1).Draw(t, "rev"),
	}
	in.Evidence.Lineage = rapid.SampledFrom(lineages).Draw(t, "lineage")
	in.RetryUnknown = rapid.Bool().Draw(t, "retryUnknown")
	in.Now = m.now
	in.Deadline = m.now.Add(time.Duration(rapid.IntRange(1, 3).Draw(t, "ttl")) * time.Minute)
	// The backend's apply delay after the forward: none declared (zero
	// QuietAt, the legacy bound), or up to three minutes.
	in.QuietAt = time.Time{}
	if d := rapid.IntRange(-1, 180).Draw(t, "applyDelaySeconds"); d >= 0 {
		in.QuietAt = in.Deadline.Add(time.Duration(d) * time.Second)
	}
	before, err := m.s.Record(m.ctx, in.Resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Record: %v", err)
	}
	got, err := m.s.Begin(m.ctx, in)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if !reflect.DeepEqual(got.Prior, before) {
		t.Fatalf("Begin's Prior %s, the record before %s", dump(got.Prior), dump(before))
	}
	next, want := st.begin(in)
	if g := beginOut(got); g != want {
		t.Fatalf("Begin(%s fence %d, epoch %d): got %+v (%s), model %+v", in.Ref().OperationID(), in.Fence, in.Evidence.IssuerEpoch, g, got.Detail, want)
	}
	m.model[i] = next
	m.seen[string(want.Decision)]++
	if l := st.evidence.Lineage; in.Fence < st.highest && l != "" && in.Evidence.Lineage != "" && l != in.Evidence.Lineage {
		m.seen["otherLineage:"+string(want.Decision)]++
	}
}

func (m *machine) commit(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	r := m.ref(t, i)
	c := Answer(r)
	c.Now = m.now
	c.BackendStatus = rapid.SampledFrom([]int{200, 201, 404, 409}).Draw(t, "status")
	got, err := m.s.Commit(m.ctx, c)
	next, want := m.model[i].commit(r)
	m.compare(t, "Commit", r, mOut{Class: classOf(err), ID: got.ID}, want)
	m.model[i] = next
}

func (m *machine) markUnknown(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	r := m.ref(t, i)
	_, err := m.s.MarkUnknown(m.ctx, store.MarkUnknownInput{OpRef: r, Now: m.now})
	next, want := m.model[i].markUnknown(r)
	m.compare(t, "MarkUnknown", r, mOut{Class: classOf(err)}, want)
	m.model[i] = next
}

func (m *machine) abort(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	r := m.ref(t, i)
	_, err := m.s.Abort(m.ctx, store.AbortInput{OpRef: r, Now: m.now})
	next, want := m.model[i].abort(r)
	m.compare(t, "Abort", r, mOut{Class: classOf(err)}, want)
	m.model[i] = next
}

func (m *machine) resolve(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	r := m.ref(t, i)
	in := store.ResolveInput{OpRef: r, Applied: rapid.Bool().Draw(t, "applied"), Now: m.now,
		EvidenceAge: time.Duration(rapid.SampledFrom([]int{0, 0, 30, 120}).Draw(t, "evidenceAgeSeconds")) * time.Second}
	if in.Applied {
		in.Response = store.StoredResponse{Status: 200}
	} else {
		in.Closed = rapid.IntRange(0, 3).Draw(t, "closed") == 0
	}
	got, err := m.s.Resolve(m.ctx, in)
	out := mOut{Class: classOf(err)}
	if got.Receipt != nil {
		out.ID = got.Receipt.ID
	}
	next, want := m.model[i].resolve(in)
	m.compare(t, fmt.Sprintf("Resolve(applied=%v, closed=%v)", in.Applied, in.Closed), r, out, want)
	m.model[i] = next
}

func (m *machine) pause(t *rapid.T) {
	if rapid.IntRange(0, 3).Draw(t, "skipPause") > 0 {
		return // pausing often would leave little else to see
	}
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	_, err := m.s.Pause(m.ctx, store.PauseInput{Resource: m.resource(i), Reason: store.PauseOperator, Now: m.now})
	next, want := m.model[i].pause()
	m.compare(t, "Pause", store.OpRef{Resource: m.resource(i)}, mOut{Class: classOf(err)}, want)
	m.model[i] = next
}

func (m *machine) resume(t *rapid.T) {
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	_, err := m.s.Resume(m.ctx, m.resource(i))
	next, want := m.model[i].resume()
	m.compare(t, "Resume", store.OpRef{Resource: m.resource(i)}, mOut{Class: classOf(err)}, want)
	m.model[i] = next
}

// lineages are the issuer lineages Begin and Repair draw from: "" is a
// grant of a registry before lineages.
var lineages = []string{"", "l1", "l1", "l2", "l3"}

// repair draws an anchor near the resource's model state (below, at it
// under its root or another, above; maybe pending, maybe paused) and
// repairs the store to it.
func (m *machine) repair(t *rapid.T) {
	if rapid.IntRange(0, 3).Draw(t, "skipRepair") > 0 {
		return // every repair pauses
	}
	i := rapid.IntRange(0, machineResources-1).Draw(t, "res")
	st := m.model[i]
	fence := st.highest + rapid.Uint64Range(0, 1).Draw(t, "anchorFence")
	if fence > 1 && rapid.IntRange(0, 3).Draw(t, "anchorBelow") == 0 {
		fence--
	}
	a := fencegate.Progress{}
	if fence > 0 {
		a = Progress(fence, rapid.Uint64Range(0, st.lastSeq+2).Draw(t, "anchorLastSeq"), 0, "")
		if rapid.IntRange(0, 5).Draw(t, "anchorOtherRoot") == 0 {
			a.Root = "other"
		}
		a.Lineage = rapid.SampledFrom(lineages).Draw(t, "anchorLineage")
		if rapid.Bool().Draw(t, "anchorPending") {
			a.Pending = &fencegate.PendingOp{Seq: a.LastSeq + 1, PayloadDigest: Digest(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "anchorPayload")),
				Owner: Owner(fence)}
		}
	}
	window := time.Duration(rapid.IntRange(0, 2).Draw(t, "window")) * time.Minute
	_, err := m.s.Repair(m.ctx, store.RepairInput{Resource: m.resource(i), Anchored: a, Now: m.now, Window: window})
	next, want := st.repair(a, m.now, window)
	m.compare(t, "Repair", store.OpRef{Resource: m.resource(i), Fence: a.Fence}, mOut{Class: classOf(err)}, want)
	m.model[i] = next
}

func (m *machine) tick(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(1, 90).Draw(t, "seconds")) * time.Second)
}

func (m *machine) compare(t *rapid.T, op string, r store.OpRef, got, want mOut) {
	if got != want {
		t.Fatalf("%s(%s fence %d): got %+v, model %+v", op, r.OperationID(), r.Fence, got, want)
	}
	m.seen[op+":"+want.Class]++
}

// checkAll compares every record, the quarantine counts and the unknown
// listing with the model.
func (m *machine) checkAll(t *rapid.T) {
	unknown, err := m.s.ListUnknown(m.ctx, m.now)
	if err != nil {
		t.Fatalf("ListUnknown: %v", err)
	}
	listed := map[string]bool{}
	for _, u := range unknown {
		listed[u.Resource] = true
	}
	for i := range m.model {
		st := m.model[i]
		rec, err := m.s.Record(m.ctx, m.resource(i))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Record: %v", err)
		}
		if !st.sameRecord(rec, err == nil) {
			t.Fatalf("record of %s: %s\nmodel %+v inflight %+v", m.resource(i), dump(rec), st, st.inflight)
		}
		wantListed := st.inflight != nil && (st.inflight.unknown || !m.now.Before(st.inflight.deadline))
		if listed[m.resource(i)] != wantListed {
			t.Fatalf("ListUnknown lists %s: %v, model says %v", m.resource(i), listed[m.resource(i)], wantListed)
		}
		qs, err := m.s.ListQuarantined(m.ctx, m.resource(i))
		if err != nil {
			t.Fatalf("ListQuarantined: %v", err)
		}
		if len(qs) != len(st.quarantine) {
			t.Fatalf("quarantine of %s: %d entries, model %d", m.resource(i), len(qs), len(st.quarantine))
		}
		for _, q := range qs {
			if st.quarantine[q.ID] != q.Attempts {
				t.Fatalf("quarantine %s: %d attempts, model %d", q.ID, q.Attempts, st.quarantine[q.ID])
			}
		}
		// Every receipt written is there, under its root, each owned by the
		// owner of the Begin that proceeded (or the anchor's pending owner).
		for k, want := range st.receipts {
			rc, err := m.s.Receipt(m.ctx, store.ReceiptKey{Resource: m.resource(i), Fence: k[0], Seq: k[1]})
			if err != nil {
				t.Fatalf("receipt %d/%d of %s: %v", k[0], k[1], m.resource(i), err)
			}
			if rc.Root != want.root || rc.PayloadDigest != want.payload {
				t.Fatalf("receipt %s: root %s payload %s, model %+v", rc.ID, rc.Root, rc.PayloadDigest, want)
			}
			if rc.Owner != Owner(rc.Fence) {
				t.Fatalf("receipt %s owned by %q, want %q", rc.ID, rc.Owner, Owner(rc.Fence))
			}
		}
	}
}
