package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// ErrNotSent: the backend provably received nothing of the request (its
// dial failed, or it was never tried).
var ErrNotSent = errors.New("outbound: request never sent")

// Sender sends protected writes to the backend.
type Sender struct {
	// Target is where they go and what the backend receives of the
	// client's request.
	Target *Target
	// Transport sends them (the sidecar's backend transport: send-once,
	// counted).
	Transport http.RoundTripper
	// MaxResponseBytes bounds the answer's buffered body
	// (backend.maxResponseBytes); the rest streams.
	MaxResponseBytes int64
}

// Send forwards the write in, whose whole body is body, with the fence
// headers of ref (and Idempotency-Key when idempotencyKey: the route says
// the backend honours it). It returns ErrNotSent (wrapped) only when the
// backend provably received nothing: the dial failed. Any other failure
// leaves the outcome unknown. The request is built as the pass-through
// builds it (outbound.go says what the backend receives); the answer's
// hop-by-hop fields are removed here, so neither the client nor the
// receipt gets them. The body's reader gives the request a GetBody; the
// backend transport drops it (sendonce.go), so the write is never sent
// twice. ctx carries what the transport needs of the request (the
// sidecar's coverage mark).
func (s *Sender) Send(ctx context.Context, in *http.Request, body []byte, ref store.OpRef, idempotencyKey bool) (*Response, error) {
	var connected bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }})
	out, err := http.NewRequestWithContext(ctx, in.Method, s.Target.backend.String(), bytes.NewReader(body))
	if err != nil {
		return nil, errors.Join(ErrNotSent, err)
	}
	out.URL = s.Target.URL(in)
	out.Header = in.Header.Clone()
	RemoveHopHeaders(out.Header)
	// The whole body is in hand (and the client was told to send it): a
	// backend that never answers 100 Continue must not delay the write.
	out.Header.Del("Expect")
	s.Target.Header(out.Header, in)
	out.Host = in.Host
	out.ContentLength = int64(len(body))
	out.Header.Set(fencegate.HeaderToken, strconv.FormatUint(ref.Fence, 10))
	out.Header.Set(fencegate.HeaderResource, ref.Resource)
	out.Header.Set(fencegate.HeaderRoot, ref.Root)
	out.Header.Set(fencegate.HeaderSegment, strconv.FormatUint(ref.Seq, 10))
	out.Header.Set(fencegate.HeaderOperationID, ref.OperationID())
	if idempotencyKey {
		// The sidecar's key is the only one: no Idempotency_Key or
		// idempotency.key of the client's beside it (namespace.go).
		removeSpellings(out.Header, fencegate.HeaderIdempotency)
		out.Header.Set(fencegate.HeaderIdempotency, ref.OperationID())
	}

	resp, err := s.Transport.RoundTrip(out)
	if err != nil {
		var op *net.OpError
		if !connected && errors.As(err, &op) && op.Op == "dial" {
			return nil, errors.Join(ErrNotSent, err)
		}
		return nil, err
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, s.MaxResponseBytes))
	if err != nil {
		resp.Body.Close()
		return nil, err // the answer was cut: unknown
	}
	RemoveHopHeaders(resp.Header)
	br := &Response{Status: resp.StatusCode, Header: resp.Header, Body: buf}
	if int64(len(buf)) == s.MaxResponseBytes {
		br.Rest = resp.Body
	} else {
		resp.Body.Close()
	}
	return br, nil
}
