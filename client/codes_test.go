package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// wantCode asserts that err matches both the SDK's sentinel and the
// fencegate.Code it stands for, directly and through %w wrapping.
func wantCode(t *testing.T, err error, sentinel error, code fencegate.Code) {
	t.Helper()
	for _, e := range []error{err, fmt.Errorf("wrapped: %w", err)} {
		if !errors.Is(e, sentinel) {
			t.Errorf("errors.Is(%v, client sentinel %v) is false", e, sentinel)
		}
		if !errors.Is(e, code) {
			t.Errorf("errors.Is(%v, fencegate.%s) is false", e, code)
		}
	}
}

// TestReturnedErrorsMatchSentinelAndCode: the errors the SDK returns for a
// registry answer (*Error) and a sidecar refusal (*RejectionError) match
// their client.Err* sentinel and the fencegate.Code alike, on a real
// registry and sidecar.
func TestReturnedErrorsMatchSentinelAndCode(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/codes", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)

	_, err = s.mustWorker(t, "worker-b").Hold(ctx, "batch/codes")
	var regErr *client.Error
	if !errors.As(err, &regErr) {
		t.Fatalf("held resource: %T %v, want a *client.Error", err, err)
	}
	wantCode(t, err, client.ErrLeaseHeld, fencegate.CodeLeaseHeld)
	if errors.Is(err, fencegate.CodeNotFound) || errors.Is(err, client.ErrNotFound) {
		t.Fatalf("LEASE_HELD matches NOT_FOUND: %v", err)
	}

	_, err = s.direct(t, "worker-b").Lookup(ctx, "no-such-request")
	wantCode(t, err, client.ErrNotFound, fencegate.CodeNotFound)

	// worker-a's grant sent under worker-b's identity: the sidecar refuses
	// it as OWNER_MISMATCH.
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-b"))
	resp, err := verdict((&http.Client{Transport: tr}).Do(s.put(ctx, batchPath+"codes", "x")))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a write under another identity was answered %d", resp.StatusCode)
	}
	var rej *client.RejectionError
	if !errors.As(err, &rej) {
		t.Fatalf("write under another identity: %T %v, want a *client.RejectionError", err, err)
	}
	wantCode(t, err, client.ErrOwnerMismatch, fencegate.CodeOwnerMismatch)
	if errors.Is(err, fencegate.CodeStaleOwner) || errors.Is(err, client.ErrStaleOwner) {
		t.Fatalf("OWNER_MISMATCH matches STALE_OWNER: %v", err)
	}
}

// TestSentinelsAreCodes: every sentinel of a problem code is the
// fencegate.Code itself, and an error of each code matches its own
// sentinel and no other.
func TestSentinelsAreCodes(t *testing.T) {
	sentinels := map[fencegate.Code]error{
		fencegate.CodeInvalidRequest:        client.ErrInvalidRequest,
		fencegate.CodeIdentityRequired:      client.ErrIdentityRequired,
		fencegate.CodeNotOwner:              client.ErrNotOwner,
		fencegate.CodePolicyDenied:          client.ErrPolicyDenied,
		fencegate.CodeLeaseHeld:             client.ErrLeaseHeld,
		fencegate.CodeLeaseNotHeld:          client.ErrLeaseNotHeld,
		fencegate.CodeRequestConflict:       client.ErrRequestConflict,
		fencegate.CodeNotFound:              client.ErrNotFound,
		fencegate.CodeAdminRequired:         client.ErrAdminRequired,
		fencegate.CodeBackendUnavailable:    client.ErrBackendUnavailable,
		fencegate.CodeStoreLost:             client.ErrStoreLost,
		fencegate.CodeGrantRequired:         client.ErrGrantRequired,
		fencegate.CodeGrantInvalid:          client.ErrGrantInvalid,
		fencegate.CodeOwnerMismatch:         client.ErrOwnerMismatch,
		fencegate.CodeResourceMismatch:      client.ErrResourceMismatch,
		fencegate.CodePolicyMismatch:        client.ErrPolicyMismatch,
		fencegate.CodeGrantNotHeld:          client.ErrGrantNotHeld,
		fencegate.CodeEpochRevoked:          client.ErrEpochRevoked,
		fencegate.CodeStatusStale:           client.ErrStatusStale,
		fencegate.CodeStaleOwner:            client.ErrStaleOwner,
		fencegate.CodeSegmentGap:            client.ErrSegmentGap,
		fencegate.CodeSegmentConflict:       client.ErrSegmentConflict,
		fencegate.CodeFenceRegression:       client.ErrFenceRegression,
		fencegate.CodeMutationUnknown:       client.ErrMutationUnknown,
		fencegate.CodeRegistryUnavailable:   client.ErrRegistryUnavailable,
		fencegate.CodeFenceHeaderInvalid:    client.ErrFenceHeaderInvalid,
		fencegate.CodeInvalidResource:       client.ErrInvalidResource,
		fencegate.CodeBodyTooLarge:          client.ErrBodyTooLarge,
		fencegate.CodeBodyUnreadable:        client.ErrBodyUnreadable,
		fencegate.CodeDigestMismatch:        client.ErrDigestMismatch,
		fencegate.CodeRouteNotProtected:     client.ErrRouteNotProtected,
		fencegate.CodeResourceBusy:          client.ErrResourceBusy,
		fencegate.CodeResourcePaused:        client.ErrResourcePaused,
		fencegate.CodeStoreUnavailable:      client.ErrStoreUnavailable,
		fencegate.CodeMethodOverrideRefused: client.ErrMethodOverrideRefused,
		fencegate.CodeUpgradeRefused:        client.ErrUpgradeRefused,
		fencegate.CodeReplayIncomplete:      client.ErrReplayIncomplete,
	}
	for code, sentinel := range sentinels {
		if sentinel != error(code) {
			t.Errorf("client sentinel of %s is %#v, not the fencegate.Code", code, sentinel)
		}
		p := fencegate.NewProblem(code, "detail")
		for _, err := range []error{
			&client.Error{StatusCode: code.Status(), Problem: p},
			&client.RejectionError{StatusCode: code.Status(), Problem: p},
		} {
			wantCode(t, err, sentinel, code)
			for other, s := range sentinels {
				if other != code && errors.Is(err, s) {
					t.Errorf("%T of %s matches the sentinel of %s", err, code, other)
				}
			}
		}
	}
}
