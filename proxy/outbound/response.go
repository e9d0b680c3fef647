package outbound

import (
	"io"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

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

// Response is a backend answer to a protected write whose body is
// buffered up to the sender's MaxResponseBytes; Rest streams the
// remainder, if any (nil when the whole body is in Body).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Rest   io.ReadCloser
}

// Close closes what is left of the answer's stream.
func (r *Response) Close() {
	if r.Rest != nil {
		r.Rest.Close()
	}
}

// Stored is what the receipt keeps of the response: enough to replay it
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
func (r *Response) Stored(limit int) store.StoredResponse {
	sr := store.StoredResponse{Status: r.Status, Header: map[string][]string{}}
	skip := connectionNamed(r.Header)
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
			keep(h, r.Header.Values(h))
		}
	}
	repr := map[string]bool{}
	for _, h := range representationHeaders {
		repr[http.CanonicalHeaderKey(h)] = true
	}
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		if c := http.CanonicalHeaderKey(name); !repr[c] && storedHeader(c) && !skip[c] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		keep(name, r.Header[name])
	}
	sr.Body = r.Body
	if len(sr.Body) > limit || r.Rest != nil {
		sr.Body = sr.Body[:min(len(sr.Body), limit)]
		sr.Truncated = true
	}
	return sr
}

// storedHeader reports whether a receipt may keep the header of canonical
// name c: it is not in unstoredHeaders and not in the sidecar's namespace
// (Fence-* in any spelling: Fence_Receipt, fence.replayed, namespace.go).
func storedHeader(c string) bool {
	return !unstoredHeaders[c] && !SidecarOwned(c)
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
