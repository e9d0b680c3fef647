package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/fencegate/fencegate"
)

// Receipt is what a worker may learn of a sidecar receipt (everything but
// the stored response): the proof that a segment was accepted. It is the
// contract's wire type.
type Receipt = fencegate.Receipt

// Sidecar is a client of a sidecar's own worker API
// (/.fencegate/v1/...), served on the inbound listener to identified
// callers. It takes the same options as New (WithTLSFiles for mTLS,
// WithIdentityHeader in header modes, WithHTTPClient).
type Sidecar struct{ c *Client }

// NewSidecar returns a client for the sidecar at baseURL ("http://127.0.0.1:8780").
func NewSidecar(baseURL string, opts ...Option) (*Sidecar, error) {
	c, err := New(baseURL, opts...)
	if err != nil {
		return nil, err
	}
	return &Sidecar{c: c}, nil
}

// Receipts lists the receipts of an operation ID (root/seq) of a resource.
func (s *Sidecar) Receipts(ctx context.Context, resource, operationID string) ([]Receipt, error) {
	q := url.Values{"resource": {resource}, "op": {operationID}}
	var out []Receipt
	if err := s.c.do(ctx, http.MethodGet, "/.fencegate/v1/receipts?"+q.Encode(), nil, &out, false); err != nil {
		return nil, err
	}
	return out, nil
}

// Recover is the recovery path for a mutation whose outcome is
// unknown (a lost answer, MUTATION_UNKNOWN): it asks the sidecar whether
// the operation was accepted. An accepted operation's receipt is returned:
// reuse it, do not do the work again. ErrNoReceipt means the sidecar holds
// no receipt yet, which does not prove the mutation was not applied: the
// backend may still be working on it, or apply it later (the resource
// awaits reconciliation: the route's effect query, an idempotent retry, or
// an operator with 'fencegate reconcile', which settles "not applied" only
// once no attempt can take effect any more); any other error means the
// question could not be asked.
func (s *Sidecar) Recover(ctx context.Context, resource, operationID string) (*Receipt, error) {
	list, err := s.Receipts(ctx, resource, operationID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %s of %s", ErrNoReceipt, operationID, resource)
	}
	if err != nil {
		return nil, fmt.Errorf("client: recover %s: %w", operationID, err)
	}
	for i := range list {
		if list[i].OperationID == operationID {
			return &list[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s of %s", ErrNoReceipt, operationID, resource)
}

// Recover asks the sidecar that err came from whether the operation err
// is about was accepted (see Sidecar.Recover). err is an
// *OutcomeUnknownError, a *RejectionError or a *ReplayIncompleteError from
// this Transport. The request goes through the Transport's base
// RoundTripper with its headers (identity), never with the grant.
func (t *Transport) Recover(ctx context.Context, err error) (*Receipt, error) {
	var rawURL, resource, op string
	var ue *OutcomeUnknownError
	var re *RejectionError
	var ri *ReplayIncompleteError
	switch {
	case errors.As(err, &ue):
		rawURL, resource, op = ue.URL, ue.Resource, ue.OperationID
	case errors.As(err, &re):
		rawURL, resource, op = re.URL, re.Resource, re.OperationID
	case errors.As(err, &ri):
		rawURL, resource, op = ri.URL, ri.Resource, ri.OperationID
	default:
		return nil, fmt.Errorf("client: recover: %w carries no operation ID", err)
	}
	u, perr := url.Parse(rawURL)
	if perr != nil || u.Host == "" {
		return nil, fmt.Errorf("client: recover: cannot tell the sidecar from %q", rawURL)
	}
	base := &url.URL{Scheme: u.Scheme, Host: u.Host}
	opts := []Option{WithHTTPClient(&http.Client{Transport: t.base})}
	for k, vs := range t.header {
		for _, v := range vs {
			opts = append(opts, WithIdentityHeader(k, v))
		}
	}
	sc, serr := NewSidecar(base.String(), opts...)
	if serr != nil {
		return nil, serr
	}
	return sc.Recover(ctx, resource, op)
}
