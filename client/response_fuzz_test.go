package client_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// FuzzResponseError: whatever a response holds (status, content type,
// body, receipt, replay mark, and the segment and grant of the request it
// answers), ResponseError never panics, leaves the body readable byte for
// byte, and answers nil or one of its typed errors: a *RejectionError only
// for a fencegate problem without a receipt, a *ReplayIncompleteError
// only for a replay with one.
func FuzzResponseError(f *testing.F) {
	f.Add(409, fencegate.ProblemContentType, `{"type":"https://fencegate.dev/problems/STALE_OWNER","status":409,"code":"STALE_OWNER","highestFence":9}`, "", false, "2", "")
	f.Add(409, fencegate.ProblemContentType, `{"type":"https://fencegate.dev/problems/REPLAY_INCOMPLETE","code":"REPLAY_INCOMPLETE","backendStatus":201}`, "rcpt-1", true, "1", "a.b.c")
	f.Add(200, "text/plain", "stored", "rcpt-2", false, "1", "")
	f.Add(503, fencegate.ProblemContentType, `{"type":"https://example.com/x","code":"DOWN"}`, "", false, "", "")
	f.Add(403, fencegate.ProblemContentType, `{not json`, "", false, "0", "e30.e30.e30")
	f.Add(409, fencegate.ProblemContentType, strings.Repeat("x", 70<<10), "", false, "99999999999999999999999", "")
	f.Fuzz(func(t *testing.T, status int, contentType, body, receipt string, replayed bool, seg, grant string) {
		req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:8780/v1/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(fencegate.HeaderSegment, seg)
		req.Header.Set(fencegate.HeaderGrant, grant)
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}
		resp.Header.Set("Content-Type", contentType)
		resp.Header.Set(fencegate.HeaderReceipt, receipt)
		if replayed {
			resp.Header.Set(fencegate.HeaderReplayed, "true")
		}
		err = client.ResponseError(resp)
		var rej *client.RejectionError
		var ri *client.ReplayIncompleteError
		switch {
		case err == nil:
		case errors.As(err, &rej):
			if receipt != "" || rej.Problem == nil || rej.Problem.Code == "" || rej.StatusCode != status {
				t.Fatalf("a rejection from %d %q with receipt %q: %+v", status, contentType, receipt, rej)
			}
		case errors.As(err, &ri):
			if receipt == "" || !replayed || ri.ReceiptID != receipt || ri.Problem == nil || ri.Problem.Code != fencegate.CodeReplayIncomplete {
				t.Fatalf("REPLAY_INCOMPLETE from %d, receipt %q, replayed %v: %+v", status, receipt, replayed, ri)
			}
		default:
			t.Fatalf("ResponseError answered %T %v", err, err)
		}
		got, rerr := io.ReadAll(resp.Body)
		if rerr != nil || !bytes.Equal(got, []byte(body)) {
			t.Fatalf("the body was not handed back whole: %d of %d bytes (%v)", len(got), len(body), rerr)
		}
	})
}
