package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store/postgres"
)

// The library phase's fence: pgfence.Apply, as a service in library mode
// calls it. Setup opens a store/postgres Store on the run's database (in
// schema libraryPgSchema), builds a pgfence.Fence in proof mode with the
// EdDSA registry's trust bundle (the sidecar arms' defaults), and holds a
// lease on libraryResource at that registry through the SDK, as a worker
// does. Each call sends the Holder's grant and its status proof
// (Holder.StatusProof: the last one while fresh, the SDK fetching the
// next ahead) with the next segment and a 1 KiB payload; the segment
// advances only when Apply accepted, so a failed transaction is counted
// once, not followed by gaps.

// Library fence settings.
const (
	libraryPgSchema = "library_postgres"
	libraryResource = "bench/" + libraryArm
)

// errLibrarySetup is matched by the library fence's setup errors.
var errLibrarySetup = errors.New("bench: library fence setup")

// pgfenceApply is the library fence built on pgfence.
func pgfenceApply() *libraryFence {
	return &libraryFence{Name: "pgfence.Apply", Setup: setupPgfence}
}

// setupPgfence prepares pgfence.Apply on env; close releases the lease
// and closes the store.
func setupPgfence(ctx context.Context, env libraryEnv) (fencedTx, func(), error) {
	if env.RegistryURL == "" || env.KeysDir == "" {
		return nil, nil, fmt.Errorf("%w: no EdDSA registry in this run", errLibrarySetup)
	}
	st, err := postgres.Open(ctx, postgres.Options{DSN: env.DSN, Schema: libraryPgSchema})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errLibrarySetup, err)
	}
	fence, err := pgfence.New(ctx, st, pgfence.WithTrustBundle(filepath.Join(env.KeysDir, "jwks.json")), pgfence.WithProofStatus(proofMaxAge))
	if err != nil {
		_ = st.Close()
		return nil, nil, fmt.Errorf("%w: %w", errLibrarySetup, err)
	}
	reg, err := client.New(env.RegistryURL, client.WithIdentityHeader(identity.DefaultHeader, workerOwner),
		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		_ = st.Close()
		return nil, nil, fmt.Errorf("%w: %w", errLibrarySetup, err)
	}
	h, err := reg.Hold(ctx, libraryResource, client.WithTTL(leaseTTL))
	if err != nil {
		_ = st.Close()
		return nil, nil, fmt.Errorf("%w: hold %s: %w", errLibrarySetup, libraryResource, err)
	}
	closeAll := func() {
		_ = h.Release(context.Background())
		_ = st.Close()
	}
	return pgfenceCall(fence, h), closeAll, nil
}

// pgfenceCall is the fencedTx applying h's grant through fence.
func pgfenceCall(fence *pgfence.Fence, h *client.Holder) fencedTx {
	var seg uint64
	return func(ctx context.Context, tx pgx.Tx, _ int) error {
		proof, err := h.StatusProof(ctx, proofMaxAge)
		if err != nil {
			return err
		}
		req := pgfence.Request{Resource: libraryResource, Caller: workerOwner, Grant: h.Grant(), Status: proof,
			Segment: seg + 1, Payload: payload}
		if _, err := fence.Apply(ctx, tx, req); err != nil {
			return err
		}
		seg++
		return nil
	}
}
