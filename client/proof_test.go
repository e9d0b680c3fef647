package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// proofAge reads a status proof's issue time (its payload, unverified:
// the sidecar verifies) and returns its age.
func proofAge(t *testing.T, proof string) time.Duration {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a compact JWS", proof)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var st fencegate.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Schema != fencegate.StatusSchema || st.State != fencegate.StateHeld {
		t.Fatalf("proof payload %s: %v, want a HELD %s", b, err, fencegate.StatusSchema)
	}
	return time.Since(time.UnixMilli(int64(st.IssuedAt)))
}

// TestStatusProofIsFreshForHalfTheMaxAge: a Holder hands a caller that
// sends its writes itself a HELD proof at most half of the route's maxAge
// old, reading a new one from the registry once the last has aged past
// that, and none once it no longer holds the lease.
func TestStatusProofIsFreshForHalfTheMaxAge(t *testing.T) {
	_, worker, _ := contextRegistry(t)
	ctx := context.Background()
	h, err := worker.Hold(ctx, "proof/r1", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const maxAge = 400 * time.Millisecond
	first, err := h.StatusProof(ctx, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	if age := proofAge(t, first); age > maxAge/2 {
		t.Fatalf("a proof %v old, want at most %v", age, maxAge/2)
	}
	time.Sleep(maxAge / 2)
	second, err := h.StatusProof(ctx, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("a proof past half of maxAge was handed out again")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := h.StatusProof(ctx, maxAge); !errors.Is(err, client.ErrNotHolding) || p != "" {
		t.Fatalf("after the release: %q %v, want ErrNotHolding", p, err)
	}
}
