package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// Rejections write nothing: a Lua mirror may then skip the write entirely.
func TestDecideRejectionsWriteNothing(t *testing.T) {
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), LastSeq: 2,
		Evidence: store.Evidence{IssuerEpoch: 1, BackendRevision: 50}}
	receipt := &store.Receipt{ID: "rcpt", OpRef: storetest.Attempt("r", 5, 1, "p1").Ref(), PayloadDigest: storetest.Digest("p1")}
	for _, c := range []struct {
		name string
		rc   *store.Receipt
		in   store.BeginInput
		want store.Decision
	}{
		{"replay", receipt, storetest.Attempt("r", 5, 1, "p1"), store.DecisionReplay},
		{"stale", nil, storetest.Attempt("r", 4, 1, "x"), store.DecisionStaleOwner},
		{"gap", nil, storetest.Attempt("r", 5, 4, "x"), store.DecisionSegmentGap},
		{"new fence not at 1", nil, storetest.Attempt("r", 6, 2, "x"), store.DecisionSegmentGap},
	} {
		res, ch, err := store.Decide(rec, c.rc, c.in)
		if err != nil || res.Decision != c.want || ch.Writes() {
			t.Errorf("%s: %s, writes %v, %v", c.name, res.Decision, ch.Writes(), err)
		}
	}
}

// A fence already accepted, attempted under another operation root, proves
// the registry issued it twice: FENCE_REGRESSION, and the pause is written in
// the same change, keeping the highest fence, the segment and the marker.
func TestDecideFenceReissued(t *testing.T) {
	ev := store.Evidence{IssuerEpoch: 1, BackendRevision: 50}
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), Lease: "lease-5", LastSeq: 2, Evidence: ev}
	inFlight := rec.Clone()
	inFlight.InFlight = &store.Mutation{OpRef: storetest.Attempt("r", 5, 3, "p3").Ref(), OperationID: "root-5/3",
		State: store.MutationInFlight, BegunAt: storetest.T0, Deadline: storetest.T0.Add(time.Minute), Attempts: 1}
	accepted := &store.Receipt{ID: "rcpt-1", OpRef: storetest.Attempt("r", 5, 1, "p1").Ref(), PayloadDigest: storetest.Digest("p1")}
	older := &store.Receipt{ID: "rcpt-4", OpRef: storetest.Attempt("r", 4, 1, "p1").Ref(), PayloadDigest: storetest.Digest("p1")}
	other := func(in store.BeginInput) store.BeginInput { in.Root = "other-root"; return in }
	for _, c := range []struct {
		name string
		rec  store.Record
		rc   *store.Receipt
		in   store.BeginInput
		want store.Decision
	}{
		{"receipt, other root, same payload", rec, accepted, other(storetest.Attempt("r", 5, 1, "p1")), store.DecisionFenceRegression},
		{"receipt, other root, other payload", rec, accepted, other(storetest.Attempt("r", 5, 1, "x")), store.DecisionFenceRegression},
		{"receipt of a lower fence, other root", rec, older, other(storetest.Attempt("r", 4, 1, "p1")), store.DecisionFenceRegression},
		{"receipt, same root, other payload", rec, accepted, storetest.Attempt("r", 5, 1, "x"), store.DecisionSegmentConflict},
		{"receipt, same root and payload", rec, accepted, storetest.Attempt("r", 5, 1, "p1"), store.DecisionReplay},
		{"highest, other root, next seq", rec, nil, other(storetest.Attempt("r", 5, 3, "x")), store.DecisionFenceRegression},
		{"highest, other root, any seq", rec, nil, other(storetest.Attempt("r", 5, 9, "x")), store.DecisionFenceRegression},
		{"highest, other root, in flight", inFlight, nil, other(storetest.Attempt("r", 5, 3, "x")), store.DecisionFenceRegression},
		{"highest, same root, in flight", inFlight, nil, storetest.Attempt("r", 5, 4, "x"), store.DecisionBusy},
		{"highest, same root, gap", rec, nil, storetest.Attempt("r", 5, 4, "x"), store.DecisionSegmentGap},
		{"higher fence, other root", rec, nil, other(storetest.Attempt("r", 6, 1, "x")), store.DecisionProceed},
		{"lower fence, other root, no receipt", rec, nil, other(storetest.Attempt("r", 4, 2, "x")), store.DecisionStaleOwner},
		// A record without a root (never written by Decide) proves nothing.
		{"highest without a root", store.Record{Resource: "r", HighestFence: 5, LastSeq: 2}, nil, other(storetest.Attempt("r", 5, 3, "x")), store.DecisionSegmentGap},
	} {
		res, ch, err := store.Decide(c.rec, c.rc, c.in)
		if err != nil || res.Decision != c.want {
			t.Errorf("%s: %s (%s), %v; want %s", c.name, res.Decision, res.Detail, err, c.want)
			continue
		}
		if c.want != store.DecisionFenceRegression {
			if ch.Record.Pause != nil || res.Record.Pause != nil {
				t.Errorf("%s: paused: %+v", c.name, res.Record.Pause)
			}
			continue
		}
		p := ch.Record.Pause
		if !ch.WriteRecord || ch.WriteReceipt || ch.Quarantine != nil || res.Quarantine != nil || p == nil ||
			p.Reason != store.PauseFenceRegression || p.Fence != c.in.Fence || p.Evidence != c.in.Evidence || !p.At.Equal(c.in.Now) ||
			!strings.Contains(p.Detail, "other-root") || res.Detail != p.Detail {
			t.Errorf("%s: change %+v, pause %+v", c.name, ch, p)
			continue
		}
		want := c.rec.Clone()
		want.Pause = p
		if !reflect.DeepEqual(ch.Record, want) || !reflect.DeepEqual(res.Record, want) {
			t.Errorf("%s: record\n got %+v\nwant %+v", c.name, ch.Record, want)
		}
		if (c.rc != nil) != (res.Receipt != nil) || c.rc != nil && res.Receipt.ID != c.rc.ID {
			t.Errorf("%s: result receipt %+v", c.name, res.Receipt)
		}
	}
}

// The pause detail names both roots and leases, bounded by MaxDetailLen (a
// Pause's limit) without splitting a UTF-8 sequence.
func TestDecideFenceReissuedDetailBounded(t *testing.T) {
	long := strings.Repeat("é", fencegate.MaxRootLen/2)
	rec := store.Record{Resource: "r", HighestFence: 5, Root: long, Lease: strings.Repeat("l", store.MaxLeaseLen), LastSeq: 1}
	in := storetest.Attempt("r", 5, 2, "x")
	in.Root = strings.Repeat("ü", fencegate.MaxRootLen/2)
	in.Lease = strings.Repeat("m", store.MaxLeaseLen)
	res, ch, err := store.Decide(rec, nil, in)
	if err != nil || res.Decision != store.DecisionFenceRegression {
		t.Fatalf("%s, %v", res.Decision, err)
	}
	d := ch.Record.Pause.Detail
	if len(d) > store.MaxDetailLen || len(d) < store.MaxDetailLen-3 || !utf8.ValidString(d) || !strings.Contains(d, long) {
		t.Fatalf("detail of %d bytes, valid UTF-8 %v: %q", len(d), utf8.ValidString(d), d)
	}
	// The stored pause is one an operator could have written.
	if err := (store.PauseInput{Resource: "r", Reason: store.PauseFenceRegression, Detail: d, Now: storetest.T0}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// The owner is a required, bounded text field of Begin.
func TestBeginInputOwner(t *testing.T) {
	for owner, ok := range map[string]bool{
		"spiffe://example.org/ns/a/sa/b": true, strings.Repeat("o", store.MaxOwnerLen): true,
		"": false, strings.Repeat("o", store.MaxOwnerLen+1): false, "a\tb": false, "a\x7fb": false, "a\xffb": false,
	} {
		in := storetest.Attempt("r", 5, 1, "a")
		in.Owner = owner
		err := in.Validate()
		var ie *store.InputError
		if ok != (err == nil) || !ok && (!errors.As(err, &ie) || ie.Field != "owner") {
			t.Errorf("owner %q (%d bytes): %v", owner[:min(len(owner), 20)], len(owner), err)
		}
	}
}

// Decide never mutates its inputs: backends may pass cached values.
func TestDecideDoesNotAlias(t *testing.T) {
	m := &store.Mutation{OpRef: storetest.Attempt("r", 5, 1, "a").Ref(), OperationID: "root-5/1", State: store.MutationInFlight,
		Deadline: storetest.T0.Add(time.Second), Attempts: 1}
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), InFlight: m}
	orig := rec.Clone()
	in := storetest.Attempt("r", 6, 1, "x")
	in.Now = storetest.T0.Add(time.Hour)
	in.Deadline = in.Now.Add(time.Minute)
	in.QuietAt = in.Deadline.Add(time.Minute)
	res, ch, err := store.Decide(rec, nil, in)
	if err != nil || res.Decision != store.DecisionMutationUnknown || !ch.WriteRecord || ch.Record.InFlight.Cause != store.CauseDeadline {
		t.Fatalf("%s %+v %v", res.Decision, ch, err)
	}
	if !reflect.DeepEqual(rec, orig) || m.State != store.MutationInFlight {
		t.Fatalf("input record mutated: %+v", rec.InFlight)
	}
	res.Record.InFlight.Attempts = 99
	if ch.Record.InFlight.Attempts == 99 {
		t.Fatal("result and change share a marker")
	}
}

func TestDecideRefusesMismatchedState(t *testing.T) {
	in := storetest.Attempt("r", 5, 1, "a")
	if _, _, err := store.Decide(store.Record{Resource: "other"}, nil, in); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("record of another resource: %v", err)
	}
	rc := &store.Receipt{OpRef: storetest.Attempt("r", 5, 2, "a").Ref()}
	if _, _, err := store.Decide(store.Record{}, rc, in); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("receipt of another segment: %v", err)
	}
}

func TestEvidenceIssuedAfter(t *testing.T) {
	e := func(epoch, rev uint64) store.Evidence {
		return store.Evidence{IssuerEpoch: epoch, BackendRevision: rev}
	}
	for _, c := range []struct {
		a, b store.Evidence
		want bool
	}{
		{e(2, 0), e(1, 100), true},
		{e(1, 101), e(1, 100), true},
		{e(1, 100), e(1, 100), false},
		{e(1, 99), e(1, 100), false},
		{e(0, 1000), e(1, 0), false},
	} {
		if got := c.a.IssuedAfter(c.b); got != c.want {
			t.Errorf("%+v.IssuedAfter(%+v) = %v", c.a, c.b, got)
		}
	}
}

func TestIDsAreDeterministicAndDistinct(t *testing.T) {
	ref := store.OpRef{Resource: "r", Fence: 5, Root: "root", Seq: 1}
	p := storetest.Digest("a")
	if a, b := store.ReceiptID(ref, p), store.ReceiptID(ref, p); a != b {
		t.Fatal("ReceiptID not deterministic")
	}
	seen := map[string]bool{}
	for _, r := range []store.OpRef{ref, {Resource: "r", Fence: 5, Root: "root", Seq: 2}, {Resource: "r", Fence: 6, Root: "root", Seq: 1},
		{Resource: "r2", Fence: 5, Root: "root", Seq: 1}, {Resource: "r", Fence: 5, Root: "root2", Seq: 1},
		// Length-prefixing keeps ("ab","c") and ("a","bc") apart.
		{Resource: "ab", Fence: 5, Root: "c", Seq: 1}, {Resource: "a", Fence: 5, Root: "bc", Seq: 1}} {
		for _, id := range []string{store.ReceiptID(r, p), store.QuarantineID(r, p)} {
			if seen[id] {
				t.Fatalf("ID collision for %+v", r)
			}
			seen[id] = true
		}
	}
	if !strings.HasPrefix(store.ReceiptID(ref, p), "rcpt-") || !strings.HasPrefix(store.QuarantineID(ref, p), "qrnt-") {
		t.Fatal("ID prefixes")
	}
}

func TestQuarantineMerge(t *testing.T) {
	t1, t2 := storetest.T0, storetest.T0.Add(time.Hour)
	prev := store.Quarantine{ID: "q", FirstSeen: t1, LastSeen: t1, Attempts: 3}
	got := store.Quarantine{ID: "q", FirstSeen: t2, LastSeen: t2, Attempts: 1}.Merge(prev)
	if !got.FirstSeen.Equal(t1) || !got.LastSeen.Equal(t2) || got.Attempts != 4 {
		t.Fatalf("merge: %+v", got)
	}
	other := store.Quarantine{ID: "other", Attempts: 1}.Merge(prev)
	if other.Attempts != 1 {
		t.Fatalf("merge of another ID: %+v", other)
	}
}

func TestValidateOperationID(t *testing.T) {
	for id, ok := range map[string]bool{
		"root/1": true, "a/b/c/42": true, "sha256:51c/4294967295": true,
		"root": false, "/1": false, "root/": false, "root/0": false, "root/01": false, "root/+1": false,
		"root/4294967296": false, "ro\x00ot/1": false, strings.Repeat("r", fencegate.MaxRootLen+1) + "/1": false,
	} {
		if err := store.ValidateOperationID(id); (err == nil) != ok {
			t.Errorf("ValidateOperationID(%q) = %v", id, err)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	for in, want := range map[int]int{0: store.DefaultMaxResponseBody, -1: store.DefaultMaxResponseBody, 10: 10,
		store.MaxResponseBodyLimit + 1: store.MaxResponseBodyLimit} {
		if got := store.BodyLimit(in); got != want {
			t.Errorf("BodyLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestCommitCutsBodyAtConfiguredLimit(t *testing.T) {
	in := storetest.Attempt("r", 5, 1, "a")
	_, ch, err := store.Decide(store.Record{}, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	ans := storetest.Answer(in.Ref())
	ans.Response.Body = []byte("0123456789")
	c, err := store.DecideCommit(ch.Record, nil, ans, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Receipt.Response; string(r.Body) != "0123" || !r.Truncated || r.Status != 201 {
		t.Fatalf("response %+v", r)
	}
	if string(ans.Response.Body) != "0123456789" {
		t.Fatal("input body modified")
	}
}

func TestInputErrorsAreTyped(t *testing.T) {
	in := storetest.Attempt("r", 0, 1, "a")
	err := in.Validate()
	var ie *store.InputError
	if !errors.As(err, &ie) || ie.Field != "fence" || !errors.Is(err, store.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "store: ") {
		t.Fatalf("%v", err)
	}
}

// Issuer lineages: below the highest fence, evidence compares only within
// one lineage (or when either is unknown); a lineage the record saw
// superseded is STALE_OWNER, any other known lineage is a registry that did
// not continue above the highest fence: FENCE_REGRESSION and a pause,
// whatever retention deleted (no receipt is needed). A higher fence under
// another lineage is accepted and the old lineage becomes a prior one.
func TestDecideLineage(t *testing.T) {
	ev := func(lineage string, epoch, rev uint64) store.Evidence {
		return store.Evidence{IssuerEpoch: epoch, BackendRevision: rev, Lineage: lineage}
	}
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), Lease: "lease-5", LastSeq: 2,
		Evidence: ev("l2", 1, 50), PriorLineages: []store.PriorLineage{{Lineage: "l1", Fence: 4}}}
	legacy := rec.Clone() // a record whose highest fence's grant carried no lineage
	legacy.Evidence.Lineage, legacy.PriorLineages = "", nil
	at := func(fence, seq uint64, e store.Evidence) store.BeginInput {
		in := storetest.Attempt("r", fence, seq, "x")
		in.Evidence = e
		return in
	}
	full := []store.PriorLineage{{"p1", 1}, {"p2", 1}, {"p3", 1}, {"p4", 1}, {"p5", 1}, {"p6", 1}, {"p7", 1}, {"p8", 1}}
	pl := func(ls ...store.PriorLineage) []store.PriorLineage { return ls }
	for _, c := range []struct {
		name  string
		rec   store.Record
		in    store.BeginInput
		want  store.Decision
		prior []store.PriorLineage // PriorLineages after a PROCEED
	}{
		{"lower, superseded lineage", rec, at(4, 1, ev("l1", 1, 40)), store.DecisionStaleOwner, nil},
		{"lower, superseded lineage, below its fence", rec, at(2, 1, ev("l1", 1, 20)), store.DecisionStaleOwner, nil},
		{"lower, superseded lineage, later evidence", rec, at(4, 1, ev("l1", 9, 900)), store.DecisionStaleOwner, nil},
		// l1 was superseded at fence 4: its fence 5 (l1 has 4 at most) was
		// issued after that, by a rolled-back registry below the highest.
		{"lower, superseded lineage above the fence it reached", func() store.Record { r := rec.Clone(); r.HighestFence = 7; return r }(),
			at(5, 1, ev("l1", 1, 50)), store.DecisionFenceRegression, nil},
		{"lower, unseen lineage", rec, at(4, 1, ev("l3", 1, 40)), store.DecisionFenceRegression, nil},
		{"lower, unseen lineage, earlier evidence", rec, at(1, 1, ev("l3", 0, 1)), store.DecisionFenceRegression, nil},
		{"lower, unseen lineage, later evidence", rec, at(4, 1, ev("l3", 2, 1)), store.DecisionFenceRegression, nil},
		{"lower, same lineage, earlier evidence", rec, at(4, 1, ev("l2", 1, 40)), store.DecisionStaleOwner, nil},
		{"lower, same lineage, later evidence", rec, at(4, 1, ev("l2", 1, 51)), store.DecisionFenceRegression, nil},
		{"lower, grant without lineage, earlier evidence", rec, at(4, 1, ev("", 1, 40)), store.DecisionStaleOwner, nil},
		{"lower, grant without lineage, later evidence", rec, at(4, 1, ev("", 2, 1)), store.DecisionFenceRegression, nil},
		{"lower, record without lineage, earlier evidence", legacy, at(4, 1, ev("l3", 1, 40)), store.DecisionStaleOwner, nil},
		{"lower, record without lineage, later evidence", legacy, at(4, 1, ev("l3", 2, 1)), store.DecisionFenceRegression, nil},
		{"higher, another lineage", rec, at(6, 1, ev("l3", 1, 1)), store.DecisionProceed, pl(store.PriorLineage{"l1", 4}, store.PriorLineage{"l2", 5})},
		{"higher, a superseded lineage again", rec, at(6, 1, ev("l1", 1, 1)), store.DecisionProceed, pl(store.PriorLineage{"l1", 4}, store.PriorLineage{"l2", 5})},
		{"higher, same lineage", rec, at(6, 1, ev("l2", 1, 60)), store.DecisionProceed, pl(store.PriorLineage{"l1", 4})},
		{"higher, grant without lineage", rec, at(6, 1, ev("", 1, 60)), store.DecisionProceed, pl(store.PriorLineage{"l1", 4}, store.PriorLineage{"l2", 5})},
		{"higher, record without lineage", legacy, at(6, 1, ev("l3", 1, 60)), store.DecisionProceed, nil},
		{"higher, prior lineages full", func() store.Record { r := rec.Clone(); r.PriorLineages = full; return r }(),
			at(6, 1, ev("l3", 1, 1)), store.DecisionProceed, append(full[1:len(full):len(full)], store.PriorLineage{"l2", 5})},
		// Steps before 3 do not look at lineages.
		{"highest, other root, other lineage", rec, func() store.BeginInput { in := at(5, 3, ev("l1", 1, 1)); in.Root = "other"; return in }(),
			store.DecisionFenceRegression, nil},
		{"highest, same root, other lineage", rec, at(5, 3, ev("l3", 1, 1)), store.DecisionProceed, pl(store.PriorLineage{"l1", 4})},
	} {
		res, ch, err := store.Decide(c.rec, nil, c.in)
		if err != nil || res.Decision != c.want {
			t.Errorf("%s: %s (%s), %v; want %s", c.name, res.Decision, res.Detail, err, c.want)
			continue
		}
		switch c.want {
		case store.DecisionStaleOwner:
			if ch.Writes() {
				t.Errorf("%s: stale owner writes %+v", c.name, ch)
			}
		case store.DecisionFenceRegression:
			p := ch.Record.Pause
			if !ch.WriteRecord || p == nil || p.Reason != store.PauseFenceRegression || p.Fence != c.in.Fence || p.Evidence != c.in.Evidence ||
				ch.Record.HighestFence != c.rec.HighestFence || !reflect.DeepEqual(ch.Record.PriorLineages, c.rec.PriorLineages) {
				t.Errorf("%s: change %+v, pause %+v", c.name, ch, p)
			}
			if c.in.Fence < c.rec.HighestFence && c.in.Evidence.Lineage != "" && c.rec.Evidence.Lineage != "" && c.in.Evidence.Lineage != c.rec.Evidence.Lineage &&
				(!strings.Contains(p.Detail, c.in.Evidence.Lineage) || !strings.Contains(p.Detail, c.rec.Evidence.Lineage)) {
				t.Errorf("%s: detail %q names neither lineage", c.name, p.Detail)
			}
		case store.DecisionProceed:
			r := ch.Record
			if !ch.WriteRecord || !reflect.DeepEqual(r.PriorLineages, c.prior) || r.Evidence != c.in.Evidence && c.in.Fence > c.rec.HighestFence {
				t.Errorf("%s: record lineage %q, prior %v; want %q, prior %v", c.name, r.Evidence.Lineage, r.PriorLineages, c.in.Evidence.Lineage, c.prior)
			}
		}
		if !reflect.DeepEqual(res.Prior, c.rec) {
			t.Errorf("%s: Prior %+v, want the record read", c.name, res.Prior)
		}
	}
}

// A lineage is "" or 1..64 bytes of [0-9a-z], the rule of the grant claim.
func TestBeginInputLineage(t *testing.T) {
	for l, ok := range map[string]bool{
		"": true, "0123456789abcdef0123456789abcdef": true, strings.Repeat("z", fencegate.MaxLineageLen): true,
		strings.Repeat("z", fencegate.MaxLineageLen+1): false, "ABC": false, "a-b": false, "a b": false, "é": false, "a\x00": false,
	} {
		in := storetest.Attempt("r", 5, 1, "a")
		in.Evidence.Lineage = l
		err := in.Validate()
		var ie *store.InputError
		if ok != (err == nil) || !ok && (!errors.As(err, &ie) || ie.Field != "evidence.lineage") {
			t.Errorf("lineage %q: %v", l, err)
		}
	}
}

// Prior is the record as read, sharing nothing with it or the change.
func TestDecidePrior(t *testing.T) {
	if res, _, err := store.Decide(store.Record{}, nil, storetest.Attempt("r", 5, 1, "a")); err != nil || res.Prior.Exists() {
		t.Fatalf("Prior of a new resource: %+v, %v", res.Prior, err)
	}
	rec := store.Record{Resource: "r", HighestFence: 5, Root: storetest.Root(5), LastSeq: 1, PriorLineages: []store.PriorLineage{{Lineage: "l1", Fence: 3}},
		InFlight: &store.Mutation{OpRef: storetest.Attempt("r", 5, 2, "a").Ref(), OperationID: "root-5/2", PayloadDigest: storetest.Digest("a"),
			State: store.MutationUnknown, Cause: store.CauseNoAnswer, Deadline: storetest.T0, Attempts: 1}}
	in := storetest.Attempt("r", 5, 2, "a")
	in.RetryUnknown = true
	res, ch, err := store.Decide(rec, nil, in)
	if err != nil || res.Decision != store.DecisionProceed || !reflect.DeepEqual(res.Prior, rec) {
		t.Fatalf("%s %+v %v", res.Decision, res.Prior, err)
	}
	res.Prior.InFlight.Attempts = 99
	res.Prior.PriorLineages[0].Lineage = "zz"
	if rec.InFlight.Attempts == 99 || ch.Record.InFlight.Attempts == 99 || rec.PriorLineages[0].Lineage != "l1" || ch.Record.PriorLineages[0].Lineage != "l1" {
		t.Fatal("Prior shares memory with the record read or the change")
	}
}
