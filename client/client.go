package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Client talks to one registry. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	hc         *http.Client
	header     http.Header
	adminToken string
}

// Option configures a Client.
type Option func(*Client) error

// WithHTTPClient sets the HTTP client (its transport carries mTLS).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error { c.hc = hc; return nil }
}

// WithTLSFiles makes the client use HTTPS with a client certificate
// (certFile and keyFile, for mTLS; may be empty) and a CA file to trust
// (may be empty for the system roots). The files are re-read when they
// change (see package tlsfiles), so a rotated certificate or CA is used by
// the next connection without a restart; a rotation that does not load
// keeps the last good files and is logged by slog's default logger (use
// WithTLS for another hook). The server's certificate must name the
// registry URL's host.
func WithTLSFiles(certFile, keyFile, caFile string) Option {
	return WithTLS(tlsfiles.Client{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}, tlsfiles.Reload{})
}

// WithTLS is WithTLSFiles with the files and the reload settings given.
// An empty files.ServerName is the registry URL's host.
func WithTLS(files tlsfiles.Client, r tlsfiles.Reload) Option {
	return func(c *Client) error {
		if files.ServerName == "" {
			files.ServerName = c.base.Hostname()
		}
		tc, err := files.Reloading(r)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		tr := defaultTransport()
		tr.TLSClientConfig = tc
		c.hc = &http.Client{Transport: tr}
		return nil
	}
}

// WithIdentityHeader sends a header on every request: the identity header
// of a registry in (insecure-)header mode.
func WithIdentityHeader(name, value string) Option {
	return func(c *Client) error { c.header.Set(name, value); return nil }
}

// WithAdminToken sends the admin bearer token on admin calls.
func WithAdminToken(token string) Option {
	return func(c *Client) error { c.adminToken = token; return nil }
}

// New returns a client for the registry at baseURL ("http://127.0.0.1:8700").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: registry URL %q must be http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, hc: &http.Client{Transport: defaultTransport()}, header: http.Header{}}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Lease is the registry's answer about a lease: the contract's wire type
// (fencegate.Lease), named here for the SDK's callers.
type Lease = fencegate.Lease

// AcquireRequest asks for a lease.
type AcquireRequest struct {
	Resource  string
	RequestID string
	TTL       time.Duration
	OpClass   string
	// Wait > 0 waits up to that long for the holder to release or expire.
	Wait time.Duration
}

// Acquire asks for a lease. On a transport error the outcome is unknown:
// call Lookup with the same request ID (or Acquire again with it).
func (c *Client) Acquire(ctx context.Context, r AcquireRequest) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodPost, "/v1/leases", fencegate.AcquireBody{
		Resource: r.Resource, RequestID: r.RequestID, OpClass: r.OpClass,
		TTLMs: r.TTL.Milliseconds(), WaitMs: r.Wait.Milliseconds(),
	}, &out, false)
	return &out, err
}

// Lookup finds the lease granted to the caller for a request ID.
func (c *Client) Lookup(ctx context.Context, requestID string) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(requestID), nil, &out, false)
	return &out, err
}

// Renew extends a lease by ttl (0: the lease's own TTL).
func (c *Client) Renew(ctx context.Context, lease string, ttl time.Duration) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(lease)+"/renew", fencegate.RenewBody{TTLMs: ttl.Milliseconds()}, &out, false)
	return &out, err
}

// Release releases a lease (idempotent).
func (c *Client) Release(ctx context.Context, lease string) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(lease)+"/release", nil, &out, false)
	return &out, err
}

// Status reads a lease and a fresh status proof.
func (c *Client) Status(ctx context.Context, lease string) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodGet, "/v1/leases/"+url.PathEscape(lease)+"/status", nil, &out, false)
	return &out, err
}

// StatusByDigest reads the lease of a grant digest and a status proof of
// what the registry read now; the registry may answer with a proof it
// signed up to its proofs.reuse ago (250 ms by default) that states exactly
// the same. Holder never uses it: it measures its lease from a proof's iat
// and reads by lease ID, which always gets a proof signed at the read.
func (c *Client) StatusByDigest(ctx context.Context, digest string) (*Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodGet, "/v1/grants/"+url.PathEscape(digest)+"/status", nil, &out, false)
	return &out, err
}

// Resource reads a resource's fence sequence and holder.
func (c *Client) Resource(ctx context.Context, resource string) (*fencegate.Resource, error) {
	var out fencegate.Resource
	err := c.do(ctx, http.MethodGet, "/v1/resources/"+resource, nil, &out, false)
	return &out, err
}

// JWKS fetches the registry's published trust bundle.
func (c *Client) JWKS(ctx context.Context) (jwk.Set, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/.well-known/jwks.json", nil, &raw, false); err != nil {
		return nil, err
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS: %v", ErrUnexpectedResponse, err)
	}
	return set, nil
}

// BumpEpoch increments the issuer epoch (admin).
func (c *Client) BumpEpoch(ctx context.Context) (fencegate.Meta, error) {
	var m fencegate.Meta
	err := c.do(ctx, http.MethodPost, "/v1/admin/epoch", nil, &m, true)
	return m, err
}

// RaiseFenceFloor raises a fence floor (admin); resource "" is global.
func (c *Client) RaiseFenceFloor(ctx context.Context, resource string, floor uint64) error {
	return c.do(ctx, http.MethodPost, "/v1/admin/fence-floor", fencegate.FenceFloorBody{Resource: resource, Floor: floor}, nil, true)
}

// PutPolicy stores a policy (admin).
func (c *Client) PutPolicy(ctx context.Context, p fencegate.Policy) (fencegate.Policy, error) {
	var out fencegate.Policy
	err := c.do(ctx, http.MethodPut, "/v1/admin/policies", p, &out, true)
	return out, err
}

// Policies lists policies (admin).
func (c *Client) Policies(ctx context.Context) ([]fencegate.Policy, error) {
	var out []fencegate.Policy
	err := c.do(ctx, http.MethodGet, "/v1/admin/policies", nil, &out, true)
	return out, err
}

func (c *Client) do(ctx context.Context, method, path string, body, out any, admin bool) error {
	_, err := c.doLimit(ctx, method, path, body, out, admin, maxAnswerBytes)
	return err
}

// maxAnswerBytes bounds a decoded answer (anchor pages may be larger:
// maxAnchorAnswerBytes).
const (
	maxAnswerBytes       = 4 << 20
	maxAnchorAnswerBytes = 16 << 20
)

// doLimit is do with the answer's size bound, and the answer's status.
func (c *Client) doLimit(ctx context.Context, method, path string, body, out any, admin bool, limit int64) (int, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("client: encode: %w", err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if admin && c.adminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			return resp.StatusCode, fmt.Errorf("%w: %s %s: %d: %v", ErrUnexpectedResponse, method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, &Error{StatusCode: resp.StatusCode, Problem: d}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("%w: %s %s: %v", ErrUnexpectedResponse, method, path, err)
	}
	return resp.StatusCode, nil
}

// Ready asks the registry's /readyz.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/readyz", nil, nil, false)
}

// defaultTransport keeps enough idle connections for a sidecar that asks
// the registry on every request (net/http's default keeps 2 per host).
func defaultTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.MaxIdleConns = 128
	return tr
}
