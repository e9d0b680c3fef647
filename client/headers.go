package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegate/fencegate"
)

// GrantClaims decodes the claims of a lockGrant.v1 compact JWS WITHOUT
// verifying its signature: the SDK reads its own grant (fence, operation
// root) as the registry sent it over an authenticated connection. Never use
// it to decide whether someone else's grant is genuine; that is
// verify.ParseAndVerifyGrant's job (and the sidecar's).
func GrantClaims(token string) (*fencegate.Grant, error) {
	var g fencegate.Grant
	if err := decodePayload(token, &g); err != nil {
		return nil, fmt.Errorf("client: grant: %w", err)
	}
	if g.Schema != fencegate.GrantSchema {
		return nil, fmt.Errorf("client: grant: schema %q is not %s", g.Schema, fencegate.GrantSchema)
	}
	return &g, nil
}

// statusClaims decodes a lockStatus.v1 proof without verifying it (see GrantClaims).
func statusClaims(token string) (*fencegate.Status, error) {
	var st fencegate.Status
	if err := decodePayload(token, &st); err != nil {
		return nil, fmt.Errorf("client: status proof: %w", err)
	}
	if st.Schema != fencegate.StatusSchema {
		return nil, fmt.Errorf("client: status proof: schema %q is not %s", st.Schema, fencegate.StatusSchema)
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
	if vs := req.Header.Values(fencegate.HeaderSegment); len(vs) > 0 {
		if len(vs) > 1 {
			return 0, fmt.Errorf("%w: Fence-Segment appears more than once", ErrInvalidSegment)
		}
		return fencegate.ParseSegment(strings.TrimSpace(vs[0]))
	}
	if seq, ok := req.Context().Value(segmentKey{}).(uint64); ok {
		if seq == 0 || seq > fencegate.MaxSeq {
			return 0, fmt.Errorf("%w: %d is not between 1 and %d", ErrInvalidSegment, seq, uint64(fencegate.MaxSeq))
		}
		return seq, nil
	}
	return 1, nil
}
