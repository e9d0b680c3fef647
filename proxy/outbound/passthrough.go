package outbound

import (
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/proxy/inbound"
)

// PassThrough forwards what is not a fence decision (reads, unmatched
// mutations passed, routes in mode off, shadow passes) with the reverse
// proxy, streaming both ways.
//
// A pass-through is not bound by server.writeTimeout, which bounds the
// answers of protected writes: a long-streaming read would be cut mid-body
// with its status already sent. Its write deadline is writeTimeout from
// the start of the pass-through (server.passWriteTimeout), or none when
// that is 0 (the default).
type PassThrough struct {
	rp           *httputil.ReverseProxy
	writeTimeout time.Duration
}

// NewPassThrough is the pass-through to target through tr, with the write
// deadline writeTimeout (0: none). onError answers a request the backend
// did not answer. The reverse proxy strips hop-by-hop fields, keeps an
// allowed upgrade's, suppresses Go's User-Agent and relays 1xx answers
// and trailers; Rewrite replaces the target it
// would re-encode (it drops unparsable query parameters) and the
// forwarding headers (outbound.go, forwarded.go).
func NewPassThrough(target *Target, tr http.RoundTripper, writeTimeout time.Duration, onError func(http.ResponseWriter, *http.Request, error)) *PassThrough {
	return &PassThrough{writeTimeout: writeTimeout, rp: &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target.URL(pr.In)
			pr.Out.Host = pr.In.Host
			target.Header(pr.Out.Header, pr.In)
			// No request trailers, nor their announcement: the clone's
			// trailer has the names the client announced, never their
			// values (they arrive after the body).
			pr.Out.Trailer = nil
		},
		ModifyResponse: passedAnswer,
		Transport:      tr,
		FlushInterval:  -1,
		ErrorHandler:   onError,
	}}
}

// ServeHTTP sets the pass-through's write deadline, then forwards.
func (pt *PassThrough) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var deadline time.Time
	if pt.writeTimeout > 0 {
		// A socket deadline is on the process's clock, whatever the
		// sidecar's Clock is.
		deadline = clock.Real().Now().Add(pt.writeTimeout)
	}
	// A ResponseWriter without deadlines (ErrNotSupported) has no server
	// timeout to lift either. The server clears the deadline once the
	// answer is finished, before the connection's next request.
	_ = http.NewResponseController(w).SetWriteDeadline(deadline)
	pt.rp.ServeHTTP(relayed{w}, r)
}

// passedAnswer is the pass-through's ModifyResponse: the answer to a
// mutation passed unchecked (unmatched, mode off, a shadow pass) loses
// every backend field in the sidecar's namespace (namespace.go): only the
// sidecar says Fence-Receipt, and it says it only for a fenced write. A
// read's answer is relayed as it is. (1xx answers and response trailers
// are relayed as they come: no client takes a final answer's
// Fence-Receipt from them.)
func passedAnswer(resp *http.Response) error {
	if resp.Request == nil || !inbound.ReadMethod(resp.Request.Method) {
		RemoveSidecarOwned(resp.Header)
	}
	return nil
}

// relayed is the client's ResponseWriter as the reverse proxy writes the
// backend's answer to it. It keeps net/http from adding a Content-Type the
// backend did not send: without one, the server would guess it from the
// first bytes of the body, or not, depending on whether the reverse proxy
// flushed the header before the body arrived. And it sends the client one
// 100 Continue: the server's own, sent when the forward starts reading
// the client's body, which it does once the backend answered its 100
// Continue or the transport stopped waiting for it
// (ExpectContinueTimeout). Relaying the backend's as well would send two
// when the backend's came after the transport stopped waiting.
type relayed struct{ http.ResponseWriter }

// WriteHeader drops a 100 Continue and marks a final answer without
// Content-Type as having none.
func (w relayed) WriteHeader(code int) {
	if code == http.StatusContinue {
		return
	}
	if code >= 200 {
		if _, ok := w.Header()["Content-Type"]; !ok {
			w.Header()["Content-Type"] = nil
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController (flushes, deadlines, the hijack of
// an allowed upgrade) the server's ResponseWriter.
func (w relayed) Unwrap() http.ResponseWriter { return w.ResponseWriter }
