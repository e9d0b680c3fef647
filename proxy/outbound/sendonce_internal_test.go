package outbound

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// replayableByGo is net/http's Request.isReplayable (request.go): whether
// the Transport may send r again after writing it on a reused connection.
func replayableByGo(r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return false
	}
	if goIdempotent(r.Method) {
		return true
	}
	_, k := r.Header["Idempotency-Key"]
	_, x := r.Header["X-Idempotency-Key"]
	return k || x
}

// TestSendOnceShapes: whatever shape a mutation has when it reaches an
// *http.Transport (built by send from a buffered body, empty or not; cloned by
// the reverse proxy with a streamed body, or with Body nil for an empty
// one; with any mix of idempotency headers), sendOnce hands on a request
// net/http does not take for replayable, with the same method, body,
// length and header fields (names compared case-insensitively), and
// leaves the caller's request untouched. Another RoundTripper gets the
// request with only GetBody cleared. A read is handed on as it is.
func TestSendOnceShapes(t *testing.T) {
	type shape struct {
		name  string
		build func(method string) *http.Request
	}
	built := func(body string) func(string) *http.Request {
		return func(m string) *http.Request {
			r, err := http.NewRequest(m, "http://backend/x", bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	cloned := func(body string, chunked bool) func(string) *http.Request {
		return func(m string) *http.Request {
			in := httptest.NewRequest(m, "http://sidecar/x", strings.NewReader(body))
			out := in.Clone(in.Context())
			switch {
			case chunked:
				out.ContentLength = -1
			case in.ContentLength == 0:
				out.Body = nil // as httputil.ReverseProxy does
			}
			return out
		}
	}
	shapes := []shape{
		{"send, body", built("payload")},
		{"send, empty", built("")},
		{"pass-through, body", cloned("payload", false)},
		{"pass-through, chunked body", cloned("payload", true)},
		{"pass-through, empty", cloned("", false)},
	}
	headers := []http.Header{
		{},
		{"Idempotency-Key": {"k"}},
		{"X-Idempotency-Key": {"x"}},
		{"Idempotency-Key": {"k1", "k2"}, "X-Idempotency-Key": {"x"}, "Fence-Token": {"7"}},
	}
	for _, method := range []string{"PUT", "POST", "PATCH", "DELETE", "PROPPATCH", "get", "Put", "GET", "HEAD", "OPTIONS", "TRACE"} {
		for _, s := range shapes {
			for _, h := range headers {
				r := s.build(method)
				r.Header = h.Clone()
				before := *r
				beforeHeader := r.Header.Clone()
				plain := sendOnce(r, false)
				out := sendOnce(r, true)
				if !reflect.DeepEqual(r.Header, beforeHeader) || r.GetBody == nil != (before.GetBody == nil) || r.Body != before.Body {
					t.Fatalf("%s %s %v: sendOnce modified the caller's request", method, s.name, h)
				}
				if goIdempotent(method) {
					if out != r || plain != r {
						t.Fatalf("%s %s: a read was changed", method, s.name)
					}
					continue
				}
				if plain.GetBody != nil || !reflect.DeepEqual(plain.Header, r.Header) || plain.Body != r.Body {
					t.Errorf("%s %s %v: for another RoundTripper, want only GetBody cleared", method, s.name, h)
				}
				if replayableByGo(out) {
					t.Errorf("%s %s %v: net/http may send it twice (Body %T, GetBody %v, header %v)", method, s.name, h, out.Body, out.GetBody != nil, out.Header)
				}
				if out.Method != r.Method || out.Body != r.Body || out.ContentLength != r.ContentLength || out.URL != r.URL {
					t.Errorf("%s %s: the request changed beyond GetBody and field names", method, s.name)
				}
				if got, want := folded(out.Header), folded(r.Header); !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s: header fields %v, want %v", method, s.name, got, want)
				}
				if out.Body != nil && out.Body != http.NoBody {
					if !reflect.DeepEqual(out.Header, r.Header) {
						t.Errorf("%s %s: a request with a body had its field names changed: %v", method, s.name, out.Header)
					}
					b, _ := io.ReadAll(out.Body)
					if string(b) != "payload" {
						t.Errorf("%s %s: body %q", method, s.name, b)
					}
				}
			}
		}
	}
}

// folded is h with every name in lowercase (values in order).
func folded(h http.Header) map[string][]string {
	m := map[string][]string{}
	for k, vs := range h {
		m[strings.ToLower(k)] = append(m[strings.ToLower(k)], vs...)
	}
	return m
}
