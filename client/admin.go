package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fencegate/fencegate"
)

// The registry's operator routes (/v1/admin, docs/registry-api.md): every
// call sends the admin token of WithAdminToken, if any (a loopback caller
// or an admin identity needs none, as the registry is configured). The
// epoch bump, the fence floor, the policies and the meta are in
// client.go and stores.go; this file holds the lease operations.

// LeasesRequest selects a page of the registry's stored leases (GET
// /v1/admin/leases). The registry keeps a lease from its grant until
// compaction deletes it after it ended: a listing holds the HELD leases
// and those that ended within the registry's retention.
type LeasesRequest struct {
	// Resource lists one resource's leases; Prefix those of every
	// resource that starts with it. At most one; neither lists all.
	Resource string
	Prefix   string
	// State keeps the leases in that effective state (fencegate.StateHeld,
	// StateExpired, StateReleased, StateRevoked); "" keeps all.
	State string
	// After is the previous page's Next ("" for the first page).
	After string
	// Limit bounds the page (0: the registry's default, 100; at most 1000).
	Limit int
}

// query is r as the route's query string.
func (r LeasesRequest) query() string {
	q := url.Values{}
	for k, v := range map[string]string{"resource": r.Resource, "prefix": r.Prefix, "state": r.State, "after": r.After} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if r.Limit != 0 {
		q.Set("limit", strconv.Itoa(r.Limit))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Leases reads one page of the stored leases, in (resource, fence) order,
// without their grants (admin). Go on with page.Next while it is not "".
func (c *Client) Leases(ctx context.Context, r LeasesRequest) (fencegate.LeasePage, error) {
	var out fencegate.LeasePage
	err := c.do(ctx, http.MethodGet, "/v1/admin/leases"+r.query(), nil, &out, true)
	return out, err
}

// AllLeases reads every page of a listing (r.After is where it starts)
// and returns the leases together; it stops at the first error, returning
// what it read before it.
func (c *Client) AllLeases(ctx context.Context, r LeasesRequest) ([]fencegate.ListedLease, error) {
	var out []fencegate.ListedLease
	for {
		page, err := c.Leases(ctx, r)
		if err != nil {
			return out, err
		}
		out = append(out, page.Leases...)
		if page.Next == "" {
			return out, nil
		}
		if page.Next == r.After {
			return out, fmt.Errorf("%w: lease listing's next page is the one just read (%s)", ErrUnexpectedResponse, page.Next)
		}
		r.After = page.Next
	}
}

// LeaseOf reads the current or last lease of resource (GET
// /v1/resources/{resource}: its holder, without the grant); ErrNotFound
// when the resource has none stored (never granted, or compacted). Its
// State says whether it is still HELD.
func (c *Client) LeaseOf(ctx context.Context, resource string) (*fencegate.Lease, error) {
	if err := fencegate.ValidateResource(resource); err != nil {
		return nil, fmt.Errorf("client: lease of %q: %w", resource, err)
	}
	r, err := c.Resource(ctx, resource)
	if err != nil {
		return nil, err
	}
	if r.Holder == nil {
		return nil, fmt.Errorf("client: resource %s has no lease stored (last fence %d): %w", resource, r.LastFence, ErrNotFound)
	}
	return r.Holder, nil
}

// RevokeLease revokes one lease (admin: POST
// /v1/admin/leases/{lease}/revoke): its grants' status reads answer
// REVOKED from then on, so sidecars refuse them; its renewals fail with
// ErrLeaseNotHeld (state REVOKED); the resource can be acquired again at
// once, with a higher fence. Revoking a lease that already ended answers
// Revoked false and changes nothing. A missing lease is ErrNotFound.
// reason (optional, up to 1024 bytes) is logged by the registry.
func (c *Client) RevokeLease(ctx context.Context, lease, reason string) (fencegate.RevokeAnswer, error) {
	var out fencegate.RevokeAnswer
	if lease == "" {
		return out, fmt.Errorf("client: revoke: empty lease ID: %w", ErrInvalidRequest)
	}
	var body any
	if reason != "" {
		body = fencegate.RevokeBody{Reason: reason}
	}
	err := c.do(ctx, http.MethodPost, "/v1/admin/leases/"+url.PathEscape(lease)+"/revoke", body, &out, true)
	return out, err
}

// FenceFloor is RaiseFenceFloor with the registry's answer: the meta and
// the resource's record after the raise (zero for the global floor,
// resource "").
func (c *Client) FenceFloor(ctx context.Context, resource string, floor uint64) (fencegate.FenceFloorAnswer, error) {
	var out fencegate.FenceFloorAnswer
	err := c.do(ctx, http.MethodPost, "/v1/admin/fence-floor", fencegate.FenceFloorBody{Resource: resource, Floor: floor}, &out, true)
	return out, err
}

// DeletePolicy deletes the policy of pattern (admin: DELETE
// /v1/admin/policies?pattern=...): it is replaced by a tombstone of a new
// generation, which revokes the grants issued under the old one. A
// pattern without a policy is ErrNotFound.
func (c *Client) DeletePolicy(ctx context.Context, pattern string) (fencegate.Policy, error) {
	var out fencegate.Policy
	if pattern == "" {
		return out, fmt.Errorf("client: delete policy: empty pattern: %w", ErrInvalidRequest)
	}
	err := c.do(ctx, http.MethodDelete, "/v1/admin/policies?"+url.Values{"pattern": {pattern}}.Encode(), nil, &out, true)
	return out, err
}
