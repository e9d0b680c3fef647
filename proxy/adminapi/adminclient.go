package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// ErrUnexpectedAnswer is returned for an admin API answer that is neither
// the expected JSON nor a problem document.
var ErrUnexpectedAnswer = errors.New("adminapi: unexpected answer")

// maxAnswerBytes bounds a decoded answer.
const maxAnswerBytes = 16 << 20

// Client calls a sidecar's admin API (docs/sidecar-admin-api.md), as the
// fencegate CLI does. A refusal comes back as a *ProblemError, which
// matches its code: errors.Is(err, fencegate.CodeNotFound).
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithToken sends "Authorization: Bearer token" (the sidecar's
// admin.tokenFile), needed by any caller that is not on loopback.
func WithToken(token string) ClientOption { return func(c *Client) { c.token = token } }

// WithHTTPClient sets the HTTP client (default: http.DefaultClient).
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// NewClient returns a client of the admin API at baseURL
// ("http://127.0.0.1:8781").
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("adminapi: admin URL %q: want http(s)://host:port", baseURL)
	}
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ProblemError is a problem the admin API answered.
type ProblemError struct {
	Method, Path string
	Problem      *fencegate.Problem
}

func (e *ProblemError) Error() string {
	return fmt.Sprintf("adminapi: %s %s: %d %s", e.Method, e.Path, e.Problem.Status, e.Problem.Error())
}

// Is matches the problem's code (a fencegate.Code is an error).
func (e *ProblemError) Is(target error) bool {
	c, ok := target.(fencegate.Code)
	return ok && c == e.Problem.Code
}

// call sends one request and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("adminapi: encode: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("adminapi: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("adminapi: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			return fmt.Errorf("%w: %s %s: %d: %v", ErrUnexpectedAnswer, method, path, resp.StatusCode, err)
		}
		return &ProblemError{Method: method, Path: path, Problem: d}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrUnexpectedAnswer, method, path, err)
	}
	return nil
}

// Receipts reads the receipts of operation op (root/seq) of resource.
func (c *Client) Receipts(ctx context.Context, resource, op string) ([]store.Receipt, error) {
	var out []store.Receipt
	err := c.call(ctx, http.MethodGet, "/v1/receipts?"+url.Values{"resource": {resource}, "op": {op}}.Encode(), nil, &out)
	return out, err
}

// ReceiptsOf reads one page of resource's receipts in (fence, seq)
// order, after after (the zero cursor: from the first), at most limit
// (0: the sidecar's default, 100). A page shorter than limit is the last.
func (c *Client) ReceiptsOf(ctx context.Context, resource string, after ReceiptCursor, limit int) ([]store.Receipt, error) {
	q := url.Values{"resource": {resource}}
	if after != (ReceiptCursor{}) {
		q.Set("after", after.String())
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []store.Receipt
	err := c.call(ctx, http.MethodGet, "/v1/receipts?"+q.Encode(), nil, &out)
	return out, err
}

// AllReceiptsOf reads every page of resource's receipts (pages of limit,
// 0: the default) and returns them together; on an error it returns what
// it read before it.
func (c *Client) AllReceiptsOf(ctx context.Context, resource string, limit int) ([]store.Receipt, error) {
	if limit == 0 {
		limit = DefaultReceiptsLimit
	}
	var out []store.Receipt
	var after ReceiptCursor
	for {
		page, err := c.ReceiptsOf(ctx, resource, after, limit)
		if err != nil {
			return out, err
		}
		out = append(out, page...)
		if len(page) < limit {
			return out, nil
		}
		last := page[len(page)-1]
		next := ReceiptCursor{Fence: last.Fence, Seq: last.Seq}
		if next.Fence < after.Fence || (next.Fence == after.Fence && next.Seq <= after.Seq) {
			return out, fmt.Errorf("%w: receipts of %s do not move past %s", ErrUnexpectedAnswer, resource, after)
		}
		after = next
	}
}

// Receipt reads resource's receipt whose ID is id (the Fence-Receipt
// header's value); fencegate.CodeNotFound when it has none.
func (c *Client) Receipt(ctx context.Context, resource, id string) (store.Receipt, error) {
	var out store.Receipt
	err := c.call(ctx, http.MethodGet, "/v1/receipts/"+url.PathEscape(id)+"?"+url.Values{"resource": {resource}}.Encode(), nil, &out)
	return out, err
}

// Record reads the store's record of resource.
func (c *Client) Record(ctx context.Context, resource string) (store.Record, error) {
	var out store.Record
	if err := fencegate.ValidateResource(resource); err != nil {
		return out, fmt.Errorf("adminapi: record: %w", err)
	}
	err := c.call(ctx, http.MethodGet, "/v1/resources/"+resource, nil, &out)
	return out, err
}

// Reconcile settles an unknown mutation (POST /v1/reconcile).
func (c *Client) Reconcile(ctx context.Context, r ReconcileRequest) (ReconcileAnswer, error) {
	var out ReconcileAnswer
	err := c.call(ctx, http.MethodPost, "/v1/reconcile", r, &out)
	return out, err
}

// Pause pauses resource, with detail kept in its pause (POST /v1/pause).
func (c *Client) Pause(ctx context.Context, resource, detail string) (store.Record, error) {
	var out store.Record
	err := c.call(ctx, http.MethodPost, "/v1/pause", resourceBody{Resource: resource, Detail: detail}, &out)
	return out, err
}

// Resume lifts resource's pause (POST /v1/resume).
func (c *Client) Resume(ctx context.Context, resource string) (store.Record, error) {
	var out store.Record
	err := c.call(ctx, http.MethodPost, "/v1/resume", resourceBody{Resource: resource}, &out)
	return out, err
}

// Unknown lists the mutations whose outcome is unknown now.
func (c *Client) Unknown(ctx context.Context) ([]store.Mutation, error) {
	var out []store.Mutation
	err := c.call(ctx, http.MethodGet, "/v1/unknown", nil, &out)
	return out, err
}
