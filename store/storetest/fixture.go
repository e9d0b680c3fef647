package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// T0 is the base time of every fixture.
var T0 = time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)

// Digest returns the store digest of s: "sha256:" + hex SHA-256.
func Digest(s string) string { return fencegate.Digest([]byte(s)) }

// Root returns the operation root the fixtures use for a fence.
func Root(fence uint64) string { return "root-" + strconv.FormatUint(fence, 10) }

// Owner returns the workload identity the fixtures use for a fence's grant.
func Owner(fence uint64) string {
	return "spiffe://fencegate.test/worker-" + strconv.FormatUint(fence, 10)
}

// Attempt returns a valid Begin input: fence, its root, seq and a payload,
// owned by Owner(fence), issued at epoch 1 with backend revision 10*fence, at
// T0 with a one-minute deadline, quiet (no attempt can take effect any more)
// two minutes after T0.
func Attempt(resource string, fence, seq uint64, payload string) store.BeginInput {
	return store.BeginInput{
		Resource:      resource,
		Fence:         fence,
		Root:          Root(fence),
		Seq:           seq,
		PayloadDigest: Digest(payload),
		GrantDigest:   Digest("grant-" + strconv.FormatUint(fence, 10)),
		Lease:         "lease-" + strconv.FormatUint(fence, 10),
		Owner:         Owner(fence),
		Evidence:      store.Evidence{IssuerEpoch: 1, BackendRevision: 10 * fence},
		Now:           T0,
		Deadline:      T0.Add(time.Minute),
		QuietAt:       T0.Add(2 * time.Minute),
	}
}

// Answer returns a commit of ref at T0 with a small 201 response.
func Answer(ref store.OpRef) store.CommitInput {
	return store.CommitInput{
		OpRef:         ref,
		BackendStatus: 201,
		Response: store.StoredResponse{
			Header: map[string][]string{"Content-Type": {"application/json"}, "Etag": {`"` + ref.OperationID() + `"`}},
			Body:   []byte(`{"op":"` + ref.OperationID() + `"}`),
		},
		Now: T0.Add(time.Second),
	}
}

type fixture struct {
	testing.TB
	s   store.Store
	ctx context.Context
}

func newFixture(tb testing.TB, s store.Store) *fixture {
	return &fixture{TB: tb, s: s, ctx: context.Background()}
}

func (f *fixture) begin(in store.BeginInput) store.BeginResult {
	f.Helper()
	res, err := f.s.Begin(f.ctx, in)
	if err != nil {
		f.Fatalf("Begin(%s): %v", in.Ref().OperationID(), err)
	}
	return res
}

// expect runs Begin and checks the decision.
func (f *fixture) expect(in store.BeginInput, want store.Decision) store.BeginResult {
	f.Helper()
	res := f.begin(in)
	if res.Decision != want {
		f.Fatalf("Begin(fence %d %s seq %d): decision %s (%s), want %s", in.Fence, in.Root, in.Seq, res.Decision, res.Detail, want)
	}
	return res
}

func (f *fixture) commit(ref store.OpRef) store.Receipt {
	f.Helper()
	r, err := f.s.Commit(f.ctx, Answer(ref))
	if err != nil {
		f.Fatalf("Commit(%s): %v", ref.OperationID(), err)
	}
	return r
}

// accept runs Begin (expecting PROCEED) and Commit.
func (f *fixture) accept(in store.BeginInput) store.Receipt {
	f.Helper()
	f.expect(in, store.DecisionProceed)
	return f.commit(in.Ref())
}

// acceptN accepts segments 1..n of fence with payloads "p<seq>".
func (f *fixture) acceptN(resource string, fence uint64, n int) []store.Receipt {
	f.Helper()
	var out []store.Receipt
	for seq := 1; seq <= n; seq++ {
		out = append(out, f.accept(Attempt(resource, fence, uint64(seq), "p"+strconv.Itoa(seq))))
	}
	return out
}

func (f *fixture) record(resource string) store.Record {
	f.Helper()
	r, err := f.s.Record(f.ctx, resource)
	if err != nil {
		f.Fatalf("Record(%q): %v", resource, err)
	}
	return r
}

// noRecord checks that resource has no record.
func (f *fixture) noRecord(resource string) {
	f.Helper()
	if r, err := f.s.Record(f.ctx, resource); !errors.Is(err, store.ErrNotFound) {
		f.Fatalf("Record(%q) = %+v, %v; want ErrNotFound", resource, r, err)
	}
}

// unchanged checks that resource's record equals before.
func (f *fixture) unchanged(resource string, before store.Record) {
	f.Helper()
	if after := f.record(resource); !reflect.DeepEqual(after, before) {
		f.Fatalf("record changed:\nbefore %s\nafter  %s", dump(before), dump(after))
	}
}

func (f *fixture) wantErr(err, want error) {
	f.Helper()
	if !errors.Is(err, want) {
		f.Fatalf("error %v, want %v", err, want)
	}
}

func (f *fixture) check(cond bool, format string, args ...any) {
	f.Helper()
	if !cond {
		f.Fatalf(format, args...)
	}
}

func dump(r store.Record) string {
	s := fmt.Sprintf("%+v", r)
	if r.InFlight != nil {
		s += fmt.Sprintf(" inFlight=%+v", *r.InFlight)
	}
	if r.Pause != nil {
		s += fmt.Sprintf(" pause=%+v", *r.Pause)
	}
	return s
}
