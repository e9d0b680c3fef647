package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/identity"
	"github.com/fencegate/fencegate/internal/problem"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry/client"
)

// TestSentinelsMatchTheirCodes: the sidecar re-exports the SDK's codes, and
// every sentinel matches its own code only.
func TestSentinelsMatchTheirCodes(t *testing.T) {
	if proxy.CodeStaleOwner != client.CodeStaleOwner || proxy.HeaderGrant != client.HeaderGrant {
		t.Fatal("the sidecar no longer re-exports the SDK's contract constants")
	}
	// Every sentinel matches its own code only.
	sentinels := map[string]error{
		client.CodeStaleOwner: client.ErrStaleOwner, client.CodeSegmentGap: client.ErrSegmentGap,
		client.CodeGrantNotHeld: client.ErrGrantNotHeld, client.CodeMutationUnknown: client.ErrMutationUnknown,
		client.CodeRegistryUnavailable: client.ErrRegistryUnavailable, client.CodeBackendUnavailable: client.ErrBackendUnavailable,
		client.CodeReplayIncomplete: client.ErrReplayIncomplete,
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
	resp, err := tr.RoundTrip(s.put(ctx, batchPath+"handoff-msg", "upstream-1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	msg := h.Handoff(2).Header() // travels with the message
	if msg.Get(client.HeaderToken) != client.FormatSegment(h.Fence()) || msg.Get(client.HeaderRoot) != h.OperationRoot() {
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
	if resp.StatusCode != 200 || resp.Header.Get(client.HeaderReceipt) == "" {
		t.Fatalf("downstream write: %d", resp.StatusCode)
	}
	writes := s.backend.all()
	if len(writes) != 2 || writes[1].Body != "downstream-2" || writes[1].OperationID != got.OperationID() {
		t.Fatalf("backend %+v", writes)
	}

	// Mixed-up or broken messages are refused before any write.
	bad := []func(m map[string]string){
		func(m map[string]string) { m[client.HeaderToken] = "7" },                    // fence not the grant's
		func(m map[string]string) { m[client.HeaderRoot] = "sha256:other" },          // root not the grant's
		func(m map[string]string) { m[client.HeaderSegment] = "0" },                  // no such segment
		func(m map[string]string) { m[client.HeaderToken] = "-1" },                   // not a token
		func(m map[string]string) { delete(m, client.HeaderRoot) },                   // missing root
		func(m map[string]string) { m["fence-token"] = m[client.HeaderToken] + "0" }, // duplicate key
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

func problemWithCode(code string) *problem.Details { return problem.New(409, code, "") }
