package client

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate"
)

// Handoff is what an asynchronous downstream worker must carry to make
// writes for an upstream grant: fence, operation root and segment travel
// together (docs/design.md, "Long tasks"), with the resource, the lease and the
// grant itself. Marshal it into a message's headers (Header, Map), and
// unmarshal it on the other side (HandoffFromHeader, HandoffFromMap);
// Apply puts the grant and segment on the downstream worker's own request
// to the sidecar. The sidecar still decides: a downstream write of a
// superseded grant gets STALE_OWNER like any other.
//
// The message header names are the contract's (Fence-Grant, Fence-Token,
// Fence-Resource, Fence-Operation-Root, Fence-Segment) plus Fence-Lease.
type Handoff struct {
	Resource      string
	Lease         string
	Fence         uint64
	OperationRoot string
	// Segment is the segment the downstream worker is to write (>= 1).
	Segment uint64
	// Grant is the lockGrant.v1 JWS (may be empty when the downstream writer
	// checks fences itself).
	Grant string
}

// Handoff returns the hand-off of segment seq of this Holder's grant.
func (h *Holder) Handoff(seq uint64) Handoff {
	return Handoff{Resource: h.Resource(), Lease: h.LeaseID(), Fence: h.Fence(), OperationRoot: h.OperationRoot(), Segment: seq, Grant: h.Grant()}
}

// OperationID is the hand-off segment's operation ID (root/seq).
func (m Handoff) OperationID() string { return fencegate.OperationID(m.OperationRoot, m.Segment) }

// Validate checks the hand-off: a fence, a root, a segment in
// 1..fencegate.MaxSeq and a valid resource ID (fencegate.ValidateResource)
// are present, and a grant, when present, is for the same resource, lease,
// fence and root (its signature is the sidecar's to verify).
func (m Handoff) Validate() error {
	switch {
	case m.Fence == 0:
		return fmt.Errorf("%w: no fence token", ErrInvalidHandoff)
	case m.OperationRoot == "":
		return fmt.Errorf("%w: no operation root", ErrInvalidHandoff)
	case m.Segment == 0 || m.Segment > fencegate.MaxSeq:
		return fmt.Errorf("%w: segment %d is not in 1..%d", ErrInvalidHandoff, m.Segment, uint64(fencegate.MaxSeq))
	case m.Resource == "":
		return fmt.Errorf("%w: no resource", ErrInvalidHandoff)
	}
	if err := fencegate.ValidateResource(m.Resource); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidHandoff, err)
	}
	if m.Grant == "" {
		return nil
	}
	g, err := GrantClaims(m.Grant)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidHandoff, err)
	}
	if g.Resource != m.Resource || g.FenceToken != m.Fence || g.OperationRoot != m.OperationRoot || (m.Lease != "" && g.Lease != m.Lease) {
		return fmt.Errorf("%w: the grant is for %s fence %d root %s lease %s, the headers say %s fence %d root %s lease %s",
			ErrInvalidHandoff, g.Resource, g.FenceToken, g.OperationRoot, g.Lease, m.Resource, m.Fence, m.OperationRoot, m.Lease)
	}
	return nil
}

// Map marshals the hand-off into string message headers (Kafka, NATS,
// AMQP ...), keyed by the canonical header names.
func (m Handoff) Map() map[string]string {
	out := map[string]string{
		fencegate.HeaderResource: m.Resource,
		fencegate.HeaderToken:    strconv.FormatUint(m.Fence, 10),
		fencegate.HeaderRoot:     m.OperationRoot,
		fencegate.HeaderSegment:  fencegate.FormatSegment(m.Segment),
	}
	if m.Lease != "" {
		out[fencegate.HeaderLease] = m.Lease
	}
	if m.Grant != "" {
		out[fencegate.HeaderGrant] = m.Grant
	}
	return out
}

// Header marshals the hand-off into HTTP-style message headers.
func (m Handoff) Header() http.Header {
	h := http.Header{}
	for k, v := range m.Map() {
		h.Set(k, v)
	}
	return h
}

// HandoffFromMap unmarshals and validates a hand-off from string message
// headers; keys match case-insensitively.
func HandoffFromMap(headers map[string]string) (Handoff, error) {
	get := func(name string) (string, error) {
		var val string
		n := 0
		for k, v := range headers {
			if strings.EqualFold(k, name) {
				val, n = v, n+1
			}
		}
		if n > 1 {
			return "", fmt.Errorf("%w: %s appears %d times", ErrInvalidHandoff, name, n)
		}
		return strings.TrimSpace(val), nil
	}
	return handoffFrom(get)
}

// HandoffFromHeader unmarshals and validates a hand-off from HTTP-style
// message headers.
func HandoffFromHeader(h http.Header) (Handoff, error) {
	get := func(name string) (string, error) {
		vs := h.Values(name)
		switch {
		case len(vs) > 1:
			return "", fmt.Errorf("%w: %s appears %d times", ErrInvalidHandoff, name, len(vs))
		case len(vs) == 0:
			return "", nil
		}
		return strings.TrimSpace(vs[0]), nil
	}
	return handoffFrom(get)
}

func handoffFrom(get func(string) (string, error)) (Handoff, error) {
	var m Handoff
	vals := map[string]*string{fencegate.HeaderResource: &m.Resource, fencegate.HeaderRoot: &m.OperationRoot, fencegate.HeaderLease: &m.Lease, fencegate.HeaderGrant: &m.Grant}
	for name, dst := range vals {
		v, err := get(name)
		if err != nil {
			return Handoff{}, err
		}
		*dst = v
	}
	tok, err := get(fencegate.HeaderToken)
	if err != nil {
		return Handoff{}, err
	}
	if tok == "" || strings.TrimLeft(tok, "0123456789") != "" {
		return Handoff{}, fmt.Errorf("%w: %s %q is not a decimal fence token", ErrInvalidHandoff, fencegate.HeaderToken, tok)
	}
	if m.Fence, err = strconv.ParseUint(tok, 10, 64); err != nil {
		return Handoff{}, fmt.Errorf("%w: %s %q: %v", ErrInvalidHandoff, fencegate.HeaderToken, tok, err)
	}
	seg, err := get(fencegate.HeaderSegment)
	if err != nil {
		return Handoff{}, err
	}
	if m.Segment, err = fencegate.ParseSegment(seg); err != nil {
		return Handoff{}, fmt.Errorf("%w: %v", ErrInvalidHandoff, err)
	}
	if err := m.Validate(); err != nil {
		return Handoff{}, err
	}
	return m, nil
}

// Apply puts the hand-off's grant and segment on a downstream worker's
// request to the sidecar (Fence-Grant, Fence-Segment). The downstream
// worker's identity must be the grant's owner. For a route in proof mode,
// add a fresh Fence-Status too (Client.StatusByDigest).
func (m Handoff) Apply(req *http.Request) {
	req.Header.Set(fencegate.HeaderGrant, m.Grant)
	req.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(m.Segment))
}
