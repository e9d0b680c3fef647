package client

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// FuzzReadReplayIncomplete: whatever a replayed answer holds, reading it
// never panics; it is taken for REPLAY_INCOMPLETE only when it is a
// fencegate problem with that code (BackendStatus then an HTTP status or
// 0), and otherwise its body is handed back byte for byte.
func FuzzReadReplayIncomplete(f *testing.F) {
	f.Add(409, fencegate.ProblemContentType, `{"type":"https://fencegate.dev/problems/REPLAY_INCOMPLETE","status":409,"code":"REPLAY_INCOMPLETE","receiptId":"rcpt-1","backendStatus":201}`)
	f.Add(409, fencegate.ProblemContentType, `{"type":"https://fencegate.dev/problems/REPLAY_INCOMPLETE","code":"REPLAY_INCOMPLETE","backendStatus":1e300}`)
	f.Add(409, fencegate.ProblemContentType, `{"type":"https://fencegate.dev/problems/STALE_OWNER","code":"STALE_OWNER"}`)
	f.Add(409, fencegate.ProblemContentType+"; charset=utf-8", `{"type":"https://example.com/x","code":"REPLAY_INCOMPLETE"}`)
	f.Add(200, "application/json", `{"ok":true}`)
	f.Add(500, fencegate.ProblemContentType, `{not json`)
	f.Add(409, fencegate.ProblemContentType, strings.Repeat("x", 70<<10))
	f.Fuzz(func(t *testing.T, status int, contentType, body string) {
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		resp.Header.Set("Content-Type", contentType)
		resp.Header.Set(fencegate.HeaderReplayed, "true")
		ri := readReplayIncomplete(resp, "rcpt-x")
		if ri != nil {
			if ri.Problem == nil || ri.Problem.Code != fencegate.CodeReplayIncomplete || ri.ReceiptID != "rcpt-x" ||
				(ri.BackendStatus != 0 && (ri.BackendStatus < 100 || ri.BackendStatus > 599)) {
				t.Fatalf("REPLAY_INCOMPLETE read as %+v", ri)
			}
			return
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Fatalf("the body was not handed back whole: %q (%v), want %q", got, err, body)
		}
	})
}
