package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/verify"
)

// Headers of the request contract (DESIGN "Request contract"). This
// package owns their spelling; the sidecar (proxy) re-exports them.
const (
	// HeaderGrant carries the lockGrant.v1 JWS on a protected mutation.
	HeaderGrant = "Fence-Grant"
	// HeaderStatus carries a fresh lockStatus.v1 JWS proof (routes in proof mode).
	HeaderStatus = "Fence-Status"
	// HeaderSegment is the segment number, a decimal integer >= 1 (absent: 1).
	HeaderSegment = "Fence-Segment"
	// HeaderToken is the fence token (sidecar to backend; message headers).
	HeaderToken = "Fence-Token"
	// HeaderResource is the canonical resource ID (sidecar to backend; message headers).
	HeaderResource = "Fence-Resource"
	// HeaderRoot is the grant's operation root (sidecar to backend; message headers).
	HeaderRoot = "Fence-Operation-Root"
	// HeaderOperationID is root + "/" + segment (sidecar to backend).
	HeaderOperationID = "Fence-Operation-Id"
	// HeaderReceipt is the receipt ID on every accepted (or replayed) mutation's response.
	HeaderReceipt = "Fence-Receipt"
	// HeaderReplayed is "true" on a response replayed from a stored receipt.
	HeaderReplayed = "Fence-Replayed"
	// HeaderLease is the lease ID in message headers (Handoff); it is not
	// part of the HTTP request contract.
	HeaderLease = "Fence-Lease"
)

// Problem codes of the sidecar. The first fourteen are the DESIGN
// request-contract codes; the rest are the sidecar's own. This package
// owns their spelling; the sidecar (proxy/errors.go) re-exports them.
const (
	CodeGrantRequired       = "GRANT_REQUIRED"
	CodeGrantInvalid        = "GRANT_INVALID"
	CodeOwnerMismatch       = "OWNER_MISMATCH"
	CodeResourceMismatch    = "RESOURCE_MISMATCH"
	CodePolicyMismatch      = "POLICY_MISMATCH"
	CodeGrantNotHeld        = "GRANT_NOT_HELD"
	CodeEpochRevoked        = "EPOCH_REVOKED"
	CodeStatusStale         = "STATUS_STALE"
	CodeStaleOwner          = "STALE_OWNER"
	CodeSegmentGap          = "SEGMENT_GAP"
	CodeSegmentConflict     = "SEGMENT_CONFLICT"
	CodeFenceRegression     = "FENCE_REGRESSION"
	CodeMutationUnknown     = "MUTATION_UNKNOWN"
	CodeRegistryUnavailable = "REGISTRY_UNAVAILABLE"

	CodeIdentityRequired   = "IDENTITY_REQUIRED"
	CodeFenceHeaderInvalid = "FENCE_HEADER_INVALID"
	CodeInvalidResource    = "INVALID_RESOURCE"
	CodeBodyTooLarge       = "BODY_TOO_LARGE"
	CodeBodyUnreadable     = "BODY_UNREADABLE"
	CodeDigestMismatch     = "DIGEST_MISMATCH"
	CodeRouteNotProtected  = "ROUTE_NOT_PROTECTED"
	CodeResourceBusy       = "RESOURCE_BUSY"
	CodeResourcePaused     = "RESOURCE_PAUSED"
	CodeStoreUnavailable   = "STORE_UNAVAILABLE"
	CodeBackendUnavailable = "BACKEND_UNAVAILABLE"
	// CodeMethodOverrideRefused: the request carried a method-override
	// header (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override).
	CodeMethodOverrideRefused = "METHOD_OVERRIDE_REFUSED"
	// CodeUpgradeRefused: the request asked for a protocol upgrade (Upgrade,
	// h2c, HTTP2-Settings, the HTTP/2 preface) that no upgrades entry allows.
	CodeUpgradeRefused = "UPGRADE_REFUSED"
	// CodeReplayIncomplete: a replay of an accepted segment whose stored
	// answer is incomplete (its body was over the route's
	// responseStoreLimit, or a header did not fit the store). It is not a
	// rejection: the segment was accepted (the answer carries Fence-Receipt
	// and Fence-Replayed: true, and the problem's receiptId, operationId
	// and backendStatus), only the backend's answer cannot be given again.
	CodeReplayIncomplete = "REPLAY_INCOMPLETE"
)

// OperationID is the ID of one segment of an operation: root + "/" + seq,
// as the sidecar stores it in receipts and sends it to the backend.
func OperationID(root string, seq uint64) string {
	return root + "/" + strconv.FormatUint(seq, 10)
}

// ParseSegment parses a Fence-Segment value: a decimal integer >= 1 that
// fits in 64 bits, nothing else (no sign, no spaces, no list).
func ParseSegment(v string) (uint64, error) {
	if v == "" || len(v) > 20 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %q is not a decimal integer >= 1", ErrInvalidSegment, v)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: %q is not between 1 and 2^64-1", ErrInvalidSegment, v)
	}
	return n, nil
}

// FormatSegment formats a segment number for Fence-Segment.
func FormatSegment(seq uint64) string { return strconv.FormatUint(seq, 10) }

// GrantClaims decodes the claims of a lockGrant.v1 compact JWS WITHOUT
// verifying its signature: the SDK reads its own grant (fence, operation
// root) as the registry sent it over an authenticated connection. Never use
// it to decide whether someone else's grant is genuine; that is
// verify.ParseAndVerifyGrant's job (and the sidecar's).
func GrantClaims(token string) (*verify.Grant, error) {
	var g verify.Grant
	if err := decodePayload(token, &g); err != nil {
		return nil, fmt.Errorf("client: grant: %w", err)
	}
	if g.Schema != verify.GrantSchema {
		return nil, fmt.Errorf("client: grant: schema %q is not %s", g.Schema, verify.GrantSchema)
	}
	return &g, nil
}

// statusClaims decodes a lockStatus.v1 proof without verifying it (see GrantClaims).
func statusClaims(token string) (*verify.Status, error) {
	var st verify.Status
	if err := decodePayload(token, &st); err != nil {
		return nil, fmt.Errorf("client: status proof: %w", err)
	}
	if st.Schema != verify.StatusSchema {
		return nil, fmt.Errorf("client: status proof: schema %q is not %s", st.Schema, verify.StatusSchema)
	}
	return &st, nil
}

func decodePayload(token string, v any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	// encoding/json decodes integers into uint64 exactly (never via float64).
	return json.Unmarshal(raw, v)
}

// segmentOf returns the segment of an outbound request: its Fence-Segment
// header when set, else the one attached with ContextWithSegment, else 1.
func segmentOf(req *http.Request) (uint64, error) {
	if vs := req.Header.Values(HeaderSegment); len(vs) > 0 {
		if len(vs) > 1 {
			return 0, fmt.Errorf("%w: Fence-Segment appears more than once", ErrInvalidSegment)
		}
		return ParseSegment(strings.TrimSpace(vs[0]))
	}
	if seq, ok := req.Context().Value(segmentKey{}).(uint64); ok {
		return seq, nil
	}
	return 1, nil
}
