package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fencegate/fencegate"
)

// The registry's store anchor API (docs/registry-api.md, "Fenced stores"),
// the calls a sidecar makes about its fenced store: register its
// generation, anchor its progress before it forwards a mutation, keep its
// enforcement ledger, page the anchors to repair from; and the operator's
// acknowledgement of a loss. Every answer is the contract's wire type.
// Errors are *Error values matching the sentinels: ErrStoreLost (another
// generation is anchored), ErrNotFound (the store is not registered: a
// new or replaced registry), ErrPolicyDenied, ErrIdentityRequired,
// ErrInvalidRequest, ErrAdminRequired, ErrBackendUnavailable; a transport
// error leaves the outcome unknown (an anchor step may have been decided:
// repeat it, every step is safe to repeat with the same Prior and Next).

// storePath is /v1/stores/<store><suffix>, for a valid store name only.
func storePath(store, suffix string) (string, error) {
	if err := fencegate.ValidateStoreName(store); err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	return "/v1/stores/" + url.PathEscape(store) + suffix, nil
}

// RegisterStore registers the store's generation (PUT /v1/stores/{store}).
// created reports that the registry held no generation for the store and
// anchored this one (a new store, or a new or replaced registry: the
// sidecar then seeds it from its records). Another generation anchored is
// ErrStoreLost.
func (c *Client) RegisterStore(ctx context.Context, store, generation string) (anchor fencegate.StoreAnchor, created bool, err error) {
	path, err := storePath(store, "")
	if err != nil {
		return anchor, false, err
	}
	status, err := c.doLimit(ctx, http.MethodPut, path, fencegate.StoreRegistration{Generation: generation}, &anchor, false, maxAnswerBytes)
	return anchor, err == nil && status == http.StatusCreated, err
}

// StoreAnchor reads the registry's record of a store: its anchored
// generation, loss counters and enforcement ledger.
func (c *Client) StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error) {
	var out fencegate.StoreAnchor
	path, err := storePath(store, "")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodGet, path, nil, &out, false)
	return out, err
}

// AnchorProgress sends a batch of anchor steps (POST
// /v1/stores/{store}/progress), decided in one registry transaction; the
// results are in the request's order. A generation other than the
// anchored one refuses the whole batch (ErrStoreLost).
func (c *Client) AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	var out fencegate.AnchorResponse
	path, err := storePath(store, "/progress")
	if err != nil {
		return out, err
	}
	if _, err = c.doLimit(ctx, http.MethodPost, path, req, &out, false, maxAnchorAnswerBytes); err != nil {
		return out, err
	}
	if len(out.Results) != len(req.Items) {
		return fencegate.AnchorResponse{}, fmt.Errorf("%w: %d anchor results for %d items", ErrUnexpectedResponse, len(out.Results), len(req.Items))
	}
	for i, r := range out.Results {
		if r.Resource != req.Items[i].Resource {
			return fencegate.AnchorResponse{}, fmt.Errorf("%w: anchor result %d is for %q, the item for %q", ErrUnexpectedResponse, i, r.Resource, req.Items[i].Resource)
		}
	}
	return out, nil
}

// RecordLedger records an enforcement ledger event of the store (POST
// /v1/stores/{store}/ledger) and returns the store with its ledger.
func (c *Client) RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	var out fencegate.StoreAnchor
	path, err := storePath(store, "/ledger")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPost, path, ev, &out, false)
	return out, err
}

// StoreAnchors reads a page of the store's anchors (GET
// /v1/stores/{store}/anchors): the resources after after in byte order,
// at most limit (0: the registry's default). Go on with page.Next while it
// is not "".
func (c *Client) StoreAnchors(ctx context.Context, store, after string, limit int) (fencegate.AnchorPage, error) {
	var out fencegate.AnchorPage
	path, err := storePath(store, "/anchors")
	if err != nil {
		return out, err
	}
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	_, err = c.doLimit(ctx, http.MethodGet, path, nil, &out, false, maxAnchorAnswerBytes)
	return out, err
}

// AcknowledgeStoreLoss adopts generation as the store's generation after a
// loss (admin: POST /v1/stores/{store}/acknowledge). The anchors and the
// ledger stay at the registry for the sidecars to repair from.
func (c *Client) AcknowledgeStoreLoss(ctx context.Context, store, generation string) (fencegate.StoreAnchor, error) {
	var out fencegate.StoreAnchor
	path, err := storePath(store, "/acknowledge")
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPost, path, fencegate.AcknowledgeBody{Generation: generation}, &out, true)
	return out, err
}

// Meta reads the registry's global counters and its issuer lineage
// (admin: GET /v1/admin/meta).
func (c *Client) Meta(ctx context.Context) (fencegate.Meta, error) {
	var m fencegate.Meta
	err := c.do(ctx, http.MethodGet, "/v1/admin/meta", nil, &m, true)
	return m, err
}

// StoreAnchorAPI is the store anchor API as a sidecar uses it; *Client
// implements it.
type StoreAnchorAPI interface {
	RegisterStore(ctx context.Context, store, generation string) (fencegate.StoreAnchor, bool, error)
	StoreAnchor(ctx context.Context, store string) (fencegate.StoreAnchor, error)
	AnchorProgress(ctx context.Context, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error)
	RecordLedger(ctx context.Context, store string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error)
	StoreAnchors(ctx context.Context, store, after string, limit int) (fencegate.AnchorPage, error)
}

var _ StoreAnchorAPI = (*Client)(nil)
