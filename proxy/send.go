package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// hopHeaders are connection-specific (RFC 9110 7.6.1) and never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// representationHeaders are kept first in a receipt, in this order, so
// that when store.MaxResponseHeaders bites, what describes the stored body
// (its media type, its coding, what it varies on, its validators, where it
// is) is what survives.
var representationHeaders = []string{
	"Content-Type", "Content-Encoding", "Content-Language", "Content-Location", "Content-Disposition", "Content-Range",
	"Vary", "Location", "ETag", "Last-Modified", "Cache-Control", "Expires",
}

// unstoredHeaders are the response headers a receipt never keeps (by
// canonical name; the sidecar's namespace, Fence-* in any spelling, and
// the names the response's Connection header lists are never kept
// either). A replay is the answer as the backend gave it, minus what
// describes one connection or one client:
//   - hop-by-hop headers (hopHeaders, Trailer among them): they belong to
//     the connection the answer came on;
//   - Set-Cookie, Set-Cookie2: session state for the client that sent the
//     write; a replay goes to whoever presents the same segment, and
//     receipts are readable by admins;
//   - WWW-Authenticate, Proxy-Authenticate, Authentication-Info,
//     Proxy-Authentication-Info: one request's authentication exchange;
//   - Date and Content-Length: recomputed for the replay.
var unstoredHeaders = func() map[string]bool {
	m := map[string]bool{}
	for _, h := range append([]string{"Set-Cookie", "Set-Cookie2", "Www-Authenticate", "Proxy-Authenticate",
		"Authentication-Info", "Proxy-Authentication-Info", "Date", "Content-Length", "Trailer"}, hopHeaders...) {
		m[http.CanonicalHeaderKey(h)] = true
	}
	return m
}()

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

// stored is what the receipt keeps of the response: enough to replay it
// faithfully. A delivered answer is always recorded, so it is fitted to what
// the store accepts by one rule:
//   - headers: every header but those storedHeader refuses
//     (unstoredHeaders, Fence-* in any spelling, the names Connection
//     lists), the representationHeaders first in their order, then the
//     others by name; each name's values in the backend's order; a name
//     or a value the store cannot hold (a name over
//     store.MaxHeaderNameLen bytes, a value over
//     store.MaxHeaderValueLen, not UTF-8, or with a control character) is
//     dropped whole, never cut mid-value; once store.MaxResponseHeaders
//     values are kept, every later value is dropped;
//   - body: cut at limit (the route's responseStoreLimit).
//
// Anything dropped or cut marks the stored response Truncated: a replay
// then answers REPLAY_INCOMPLETE (the write was accepted, its answer cannot
// be given again), never a corrupt answer. The client that sent the write
// gets the backend's full answer regardless.
func (r *backendResponse) stored(limit int) store.StoredResponse {
	sr := store.StoredResponse{Status: r.status, Header: map[string][]string{}}
	skip := connectionNamed(r.header)
	kept := 0
	keep := func(name string, values []string) {
		for _, v := range values {
			if kept == store.MaxResponseHeaders || !storableName(name) || !storableValue(v) {
				sr.Truncated = true
				continue
			}
			sr.Header[name] = append(sr.Header[name], v)
			kept++
		}
	}
	for _, h := range representationHeaders {
		if !skip[http.CanonicalHeaderKey(h)] {
			keep(h, r.header.Values(h))
		}
	}
	repr := map[string]bool{}
	for _, h := range representationHeaders {
		repr[http.CanonicalHeaderKey(h)] = true
	}
	names := make([]string, 0, len(r.header))
	for name := range r.header {
		if c := http.CanonicalHeaderKey(name); !repr[c] && storedHeader(c) && !skip[c] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		keep(name, r.header[name])
	}
	sr.Body = r.body
	if len(sr.Body) > limit || r.rest != nil {
		sr.Body = sr.Body[:min(len(sr.Body), limit)]
		sr.Truncated = true
	}
	return sr
}

// storedHeader reports whether a receipt may keep the header of canonical
// name c: it is not in unstoredHeaders and not in the sidecar's namespace
// (Fence-* in any spelling: Fence_Receipt, fence.replayed, namespace.go).
func storedHeader(c string) bool {
	return !unstoredHeaders[c] && !sidecarOwned(c)
}

// connectionNamed returns the canonical names the Connection header of h
// lists: hop-by-hop by declaration (RFC 9110 7.6.1).
func connectionNamed(h http.Header) map[string]bool {
	m := map[string]bool{}
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				m[http.CanonicalHeaderKey(f)] = true
			}
		}
	}
	return m
}

// storableName reports whether the store accepts name as a stored header
// name: 1 to store.MaxHeaderNameLen bytes of valid UTF-8 without control
// characters.
func storableName(name string) bool {
	return name != "" && len(name) <= store.MaxHeaderNameLen && storableValue(name)
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
// failed. Any other failure leaves the outcome unknown. The request is
// built as the pass-through builds it (outbound.go says what the backend
// receives); the answer's hop-by-hop fields are removed here, so neither
// the client nor the receipt gets them. The body's reader gives the
// request a GetBody; the backend transport drops it (onceTransport,
// sendonce.go), so the write is never sent twice.
func (p *Proxy) send(ctx context.Context, a *attempt, ref store.OpRef) (*backendResponse, error) {
	var connected bool
	ctx = httptrace.WithClientTrace(a.markContext(ctx), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }})
	out, err := http.NewRequestWithContext(ctx, a.req.Method, p.backend.String(), bytes.NewReader(a.body))
	if err != nil {
		return nil, errors.Join(errNotSent, err)
	}
	out.URL = p.outboundURL(a.req)
	out.Header = a.req.Header.Clone()
	removeHopHeaders(out.Header)
	// The whole body is in hand (and the client was told to send it): a
	// backend that never answers 100 Continue must not delay the write.
	out.Header.Del("Expect")
	p.outboundHeader(out.Header, a.req)
	out.Host = a.req.Host
	out.ContentLength = int64(len(a.body))
	out.Header.Set(fencegate.HeaderToken, strconv.FormatUint(ref.Fence, 10))
	out.Header.Set(fencegate.HeaderResource, ref.Resource)
	out.Header.Set(fencegate.HeaderRoot, ref.Root)
	out.Header.Set(fencegate.HeaderSegment, strconv.FormatUint(ref.Seq, 10))
	out.Header.Set(fencegate.HeaderOperationID, ref.OperationID())
	if a.rt.IdempotencyKey {
		// The sidecar's key is the only one: no Idempotency_Key or
		// idempotency.key of the client's beside it (namespace.go).
		removeSpellings(out.Header, fencegate.HeaderIdempotency)
		out.Header.Set(fencegate.HeaderIdempotency, ref.OperationID())
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
	removeHopHeaders(resp.Header)
	br := &backendResponse{status: resp.StatusCode, header: resp.Header, body: buf}
	if int64(len(buf)) == p.cfg.Backend.MaxResponseBytes {
		br.rest = resp.Body
	} else {
		resp.Body.Close()
	}
	return br, nil
}
