package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// TestSentinelsMatchTheirCodes: every sentinel matches its own code only.
func TestSentinelsMatchTheirCodes(t *testing.T) {
	sentinels := map[fencegate.Code]error{
		fencegate.CodeStaleOwner: client.ErrStaleOwner, fencegate.CodeSegmentGap: client.ErrSegmentGap,
		fencegate.CodeGrantNotHeld: client.ErrGrantNotHeld, fencegate.CodeMutationUnknown: client.ErrMutationUnknown,
		fencegate.CodeRegistryUnavailable: client.ErrRegistryUnavailable, fencegate.CodeBackendUnavailable: client.ErrBackendUnavailable,
		fencegate.CodeReplayIncomplete: client.ErrReplayIncomplete,
	}
	for code := range sentinels {
		rej := &client.RejectionError{Problem: problemWithCode(code)}
		for c2, s := range sentinels {
			if got := errors.Is(rej, s); got != (c2 == code) {
				t.Errorf("rejection %s matches %s: %v", code, c2, got)
			}
		}
	}
}

// TestHandoffToDownstreamWorker: the upstream worker hands segment 2 to a
// downstream worker through message headers; the downstream worker writes
// it under the upstream grant and the sidecar accepts it in order.
func TestHandoffToDownstreamWorker(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/handoff-msg", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	resp, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"handoff-msg", "upstream-1")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	msg := h.Handoff(2).Header() // travels with the message
	if msg.Get(fencegate.HeaderToken) != fencegate.FormatSegment(h.Fence()) || msg.Get(fencegate.HeaderRoot) != h.OperationRoot() {
		t.Fatalf("message headers %v", msg)
	}

	// The downstream worker (same workload identity, another process).
	got, err := client.HandoffFromHeader(msg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Fence != h.Fence() || got.Segment != 2 || got.OperationRoot != h.OperationRoot() || got.Grant != h.Grant() {
		t.Fatalf("hand-off %+v", got)
	}
	req := s.put(ctx, batchPath+"handoff-msg", "downstream-2")
	req.Header.Set(identity.DefaultHeader, "worker-a")
	got.Apply(req)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("downstream write: %d", resp.StatusCode)
	}
	writes := s.backend.all()
	if len(writes) != 2 || writes[1].Body != "downstream-2" || writes[1].OperationID != got.OperationID() {
		t.Fatalf("backend %+v", writes)
	}

	// Mixed-up or broken messages are refused before any write.
	bad := []func(m map[string]string){
		func(m map[string]string) { m[fencegate.HeaderToken] = "7" },                    // fence not the grant's
		func(m map[string]string) { m[fencegate.HeaderRoot] = "sha256:other" },          // root not the grant's
		func(m map[string]string) { m[fencegate.HeaderSegment] = "0" },                  // no such segment
		func(m map[string]string) { m[fencegate.HeaderToken] = "-1" },                   // not a token
		func(m map[string]string) { delete(m, fencegate.HeaderRoot) },                   // missing root
		func(m map[string]string) { m["fence-token"] = m[fencegate.HeaderToken] + "0" }, // duplicate key

		// Above fencegate.MaxSeq: the sidecar and the store refuse it, so the
		// SDK does too (it used to accept up to 2^64-1).
		func(m map[string]string) { m[fencegate.HeaderSegment] = "4294967296" },
		// Not a resource ID the registry could have granted (no grant to
		// compare with): refused by the contract's one rule.
		func(m map[string]string) { delete(m, fencegate.HeaderGrant); m[fencegate.HeaderResource] = "a b/../c" },
	}
	for i, mutate := range bad {
		m := h.Handoff(2).Map()
		mutate(m)
		if _, err := client.HandoffFromMap(m); !errors.Is(err, client.ErrInvalidHandoff) {
			t.Errorf("bad message %d: %v", i, err)
		}
	}
	if m, err := client.HandoffFromMap(lowerKeys(h.Handoff(3).Map())); err != nil || m.Segment != 3 {
		t.Fatalf("lower-case keys: %+v %v", m, err)
	}
}

func lowerKeys(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

func problemWithCode(code fencegate.Code) *fencegate.Problem { return fencegate.NewProblem(code, "") }
