package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fencegate/fencegate/store"
)

// hopHeaders are connection-specific (RFC 9110 7.6.1) and never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// storedHeaders are the response headers kept in a receipt for replays.
var storedHeaders = []string{"Content-Type", "Content-Language", "Content-Location", "Location", "ETag", "Last-Modified", "Cache-Control"}

// backendResponse is a backend answer whose body is buffered up to
// MaxResponseBytes; rest streams the remainder, if any.
type backendResponse struct {
	status int
	header http.Header
	body   []byte
	rest   io.ReadCloser
}

func (r *backendResponse) close() {
	if r.rest != nil {
		r.rest.Close()
	}
}

// stored is what the receipt keeps of the response. A delivered answer is
// always recorded, so it is fitted to what the store accepts by one rule:
//   - headers: the names of storedHeaders in that fixed order, each name's
//     values in the backend's order; a value the store cannot hold (longer
//     than store.MaxHeaderValueLen, not UTF-8, or with a control character)
//     is dropped whole, never cut mid-value; once store.MaxResponseHeaders
//     values are kept, every later value is dropped;
//   - body: cut at limit (the route's responseStoreLimit).
//
// Anything dropped or cut marks the stored response Truncated; replays then
// carry Fence-Response-Truncated: true. The client that sent the write gets
// the backend's full answer regardless.
func (r *backendResponse) stored(limit int) store.StoredResponse {
	sr := store.StoredResponse{Status: r.status, Header: map[string][]string{}}
	kept := 0
	for _, h := range storedHeaders {
		for _, v := range r.header.Values(h) {
			if kept == store.MaxResponseHeaders || !storableValue(v) {
				sr.Truncated = true
				continue
			}
			sr.Header[h] = append(sr.Header[h], v)
			kept++
		}
	}
	sr.Body = r.body
	if len(sr.Body) > limit || r.rest != nil {
		sr.Body = sr.Body[:min(len(sr.Body), limit)]
		sr.Truncated = true
	}
	return sr
}

// storableValue reports whether the store accepts v as a stored header
// value: at most store.MaxHeaderValueLen bytes of valid UTF-8 without
// control characters (C0 including HTAB, DEL), as store validation says.
func storableValue(v string) bool {
	if len(v) > store.MaxHeaderValueLen || !utf8.ValidString(v) {
		return false
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// send forwards the attempt with the fence headers. It returns errNotSent
// (wrapped) only when the backend provably received nothing: the dial
// failed. Any other failure leaves the outcome unknown.
func (p *Proxy) send(ctx context.Context, a *attempt, ref store.OpRef) (*backendResponse, error) {
	u := *p.backend
	u.Path = strings.TrimSuffix(u.Path, "/") + a.req.URL.Path
	u.RawPath = ""
	if a.req.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.backend.EscapedPath(), "/") + a.req.URL.RawPath
	}
	u.RawQuery = a.req.URL.RawQuery
	var connected bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }})
	out, err := http.NewRequestWithContext(ctx, a.req.Method, u.String(), bytes.NewReader(a.body))
	if err != nil {
		return nil, errors.Join(errNotSent, err)
	}
	out.Header = a.req.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if c := a.req.Header.Get("Connection"); c != "" {
		for _, f := range strings.Split(c, ",") {
			out.Header.Del(strings.TrimSpace(f))
		}
	}
	for _, h := range fenceHeaders {
		out.Header.Del(h)
	}
	out.Host = a.req.Host
	out.ContentLength = int64(len(a.body))
	if host, _, err := net.SplitHostPort(a.req.RemoteAddr); err == nil {
		if prior := a.req.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			host = strings.Join(prior, ", ") + ", " + host
		}
		out.Header.Set("X-Forwarded-For", host)
	}
	out.Header.Set("X-Forwarded-Host", a.req.Host)
	proto := "http"
	if a.req.TLS != nil {
		proto = "https"
	}
	out.Header.Set("X-Forwarded-Proto", proto)
	out.Header.Set(HeaderToken, strconv.FormatUint(ref.Fence, 10))
	out.Header.Set(HeaderResource, ref.Resource)
	out.Header.Set(HeaderRoot, ref.Root)
	out.Header.Set(HeaderSegment, strconv.FormatUint(ref.Seq, 10))
	out.Header.Set(HeaderOperationID, ref.OperationID())
	if a.rt.IdempotencyKey {
		out.Header.Set(HeaderIdempotency, ref.OperationID())
	}

	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		var op *net.OpError
		if !connected && errors.As(err, &op) && op.Op == "dial" {
			return nil, errors.Join(errNotSent, err)
		}
		return nil, err
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, p.cfg.Backend.MaxResponseBytes))
	if err != nil {
		resp.Body.Close()
		return nil, err // the answer was cut: unknown
	}
	br := &backendResponse{status: resp.StatusCode, header: resp.Header, body: buf}
	if int64(len(buf)) == p.cfg.Backend.MaxResponseBytes {
		br.rest = resp.Body
	} else {
		resp.Body.Close()
	}
	return br, nil
}
