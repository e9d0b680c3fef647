package outbound

import (
	"net/http"
	"strings"
)

// Forwarded mutations are sent once (design 6.7).
//
// Go's http.Transport sends a request again, on a new connection, when a
// reused keep-alive connection fails before any byte of the answer came
// back (transport.go, persistConn.shouldRetryRequest), in two cases:
//
//  1. nothing of the request was written to the connection
//     (nothingWrittenError), and the request has no body to rewind
//     (Request.Body nil or http.NoBody) or can rewind it (GetBody set);
//  2. the request was written, and Request.isReplayable holds: its body
//     is nil, http.NoBody or rewindable (GetBody), and its method is GET,
//     HEAD, OPTIONS or TRACE, or its header has an Idempotency-Key or
//     X-Idempotency-Key key. The failure is then an error reading the
//     answer's first byte (EOF included: the backend applied the write and
//     closed the connection) or the server closing an idle connection.
//
// Case 2 resends a write the backend may already have applied: story 4 of
// issue 19, where a client's own Idempotency-Key made a PUT replayable and
// the backend held s1, s2, s2 under one receipt. (HTTP/2 would add its own
// retries, of streams the server refused or never saw; the sidecar's
// transport speaks HTTP/1.1 only: newTransport sets DialContext, which
// keeps Go from enabling HTTP/2.)
//
// sendOnce, which onceTransport applies to every request that leaves for
// the backend (every path goes through the sidecar's backend transport, as proxy/coverage.go says), makes
// case 2 impossible for any request whose method is not GET, HEAD,
// OPTIONS or TRACE (as Go spells them: every mutation, protected or
// passed unchecked), whatever headers it carries:
//
//   - GetBody is always cleared: a body that was written can never be
//     rewound and sent again;
//   - a request with a body keeps a non-nil Body, so it is not replayable
//     (and case 1 does not apply either: its length is not 0 and it has
//     no GetBody, so Go gives up even when nothing was written);
//   - a request without a body must keep Body nil (or http.NoBody): a
//     non-nil empty Body would make Go send PUT, POST and PATCH chunked
//     instead of with Content-Length: 0, and probe a DELETE's body with a
//     200 ms timer. Such a request is replayable by its header alone, so
//     its Idempotency-Key and X-Idempotency-Key fields are sent under
//     lowercase names (idempotency-key, x-idempotency-key): field names
//     are case-insensitive (RFC 9110 5.1), every backend reads them the
//     same, and Go's check, an exact map lookup of the canonical key, no
//     longer finds them. This is done only when the transport is an
//     *http.Transport, the one whose rule it answers: an in-process
//     RoundTripper given as Options.Transport (tests, the simulation) reads
//     the header map itself, where Header.Get finds canonical keys only.
//
// What remains is case 1 for a mutation without a body: resent only when
// not one byte of it reached the connection, so nothing can have reached
// the backend. Reads keep Go's behaviour (a read resent is harmless).
// Every other failure after the request left is the caller's to judge: a
// protected write becomes MUTATION_UNKNOWN (504), a passed mutation
// BACKEND_UNAVAILABLE (502). An Options.Transport other than
// *http.Transport must not retry on its own either.

// onceTransport applies sendOnce to every request before next sends it.
type onceTransport struct {
	next      http.RoundTripper
	lowerKeys bool // next is an *http.Transport: see sendOnce
}

// NewOnceTransport wraps next so that every request leaves it as sendOnce
// makes it: a mutation is never sent twice by net/http.
func NewOnceTransport(next http.RoundTripper) http.RoundTripper {
	_, goTransport := next.(*http.Transport)
	return onceTransport{next: next, lowerKeys: goTransport}
}

// RoundTrip sends sendOnce(r).
func (t onceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(sendOnce(r, t.lowerKeys))
}

// goIdempotent reports whether net/http takes method (exactly as spelled)
// for an idempotent one it may always resend; "" is GET.
func goIdempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// sendOnce returns r as it must leave for the backend: unchanged when Go
// takes its method for idempotent, else a shallow copy (r itself is never
// modified) without GetBody and, with lowerKeys, with the idempotency
// fields of a request without a body under lowercase names: one that
// net/http's Transport never takes for replayable.
func sendOnce(r *http.Request, lowerKeys bool) *http.Request {
	if goIdempotent(r.Method) {
		return r
	}
	out := *r
	out.GetBody = nil
	if lowerKeys && (out.Body == nil || out.Body == http.NoBody) {
		var h http.Header
		for _, k := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
			vs, ok := out.Header[k]
			if !ok {
				continue
			}
			if h == nil {
				h = out.Header.Clone()
			}
			delete(h, k)
			lower := strings.ToLower(k)
			h[lower] = append(h[lower], vs...)
		}
		if h != nil {
			out.Header = h
		}
	}
	return &out
}
