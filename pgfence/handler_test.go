package pgfence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/pgfence"
)

// service is a Go service that owns its handler: PUT /invoices/7 sets the
// batch's total inside the fence's transaction, answering 201 with the
// new total.
func (w *world) service(t *testing.T) *httptest.Server {
	t.Helper()
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		t.Fatal(err)
	}
	f, err := pgfence.New(context.Background(), w.st, pgfence.WithTrustBundle(w.bundle), pgfence.WithIdentity(ident))
	if err != nil {
		t.Fatal(err)
	}
	resourceOf := func(r *http.Request) (string, error) {
		batch, ok := strings.CutPrefix(r.URL.Path, "/invoices/")
		if !ok || batch == "" {
			return "", fmt.Errorf("no batch in %q", r.URL.Path)
		}
		return "invoice-batch/" + batch, nil
	}
	h := f.Handler(w.pool, pgx.TxOptions{}, resourceOf, func(rw http.ResponseWriter, r *http.Request, tx pgx.Tx) error {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		var total int64
		if _, err := fmt.Sscan(string(body), &total); err != nil {
			return fencegate.NewProblem(fencegate.CodeInvalidRequest, "the body is a total")
		}
		if _, err := tx.Exec(r.Context(), `INSERT INTO invoices (batch, total, applied) VALUES ('7', $1, 1)
			ON CONFLICT (batch) DO UPDATE SET total = excluded.total, applied = invoices.applied + 1`, total); err != nil {
			return err
		}
		rw.Header().Set("Content-Type", "text/plain")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintf(rw, "total %d", total)
		return nil
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func put(t *testing.T, url string, o owner, seq int, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url+"/invoices/7", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(identity.DefaultHeader, o.g.Owner)
	req.Header.Set(fencegate.HeaderGrant, o.grant)
	req.Header.Set(fencegate.HeaderStatus, o.proof)
	req.Header.Set(fencegate.HeaderSegment, fmt.Sprint(seq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestHandlerAnswersLikeTheSidecar: an accepted write gets the handler's
// answer with Fence-Receipt; the same request again is answered from the
// receipt (Fence-Replayed) without running the handler; a stale owner
// gets 409 STALE_OWNER as problem+json; a handler error rolls everything
// back; a request without a grant is GRANT_REQUIRED.
func TestHandlerAnswersLikeTheSidecar(t *testing.T) {
	w := newWorld(t)
	srv := w.service(t)
	a := w.lease(5)

	resp, body := put(t, srv.URL, a, 1, "100")
	receipt := resp.Header.Get(fencegate.HeaderReceipt)
	if resp.StatusCode != http.StatusCreated || body != "total 100" || receipt == "" {
		t.Fatalf("accepted write: %d %q receipt %q, want 201 \"total 100\" with a receipt", resp.StatusCode, body, receipt)
	}
	resp, body = put(t, srv.URL, a, 1, "100")
	if resp.StatusCode != http.StatusCreated || body != "total 100" || resp.Header.Get(fencegate.HeaderReplayed) != "true" ||
		resp.Header.Get(fencegate.HeaderReceipt) != receipt || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("replay: %d %q %v, want the stored 201 answer, replayed, receipt %s", resp.StatusCode, body, resp.Header, receipt)
	}
	if _, applied := w.row(); applied != 1 {
		t.Fatalf("applied %d times, want once", applied)
	}

	b := w.lease(6)
	if resp, body := put(t, srv.URL, b, 1, "200"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the new owner: %d %s", resp.StatusCode, body)
	}
	resp, body = put(t, srv.URL, a, 2, "999")
	var p fencegate.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != http.StatusConflict || p.Code != fencegate.CodeStaleOwner ||
		resp.Header.Get("Content-Type") != fencegate.ProblemContentType {
		t.Fatalf("stale owner: %d %s (%v), want 409 STALE_OWNER problem+json", resp.StatusCode, body, err)
	}

	resp, body = put(t, srv.URL, b, 2, "not a number")
	if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != http.StatusBadRequest || p.Code != fencegate.CodeInvalidRequest {
		t.Fatalf("handler error: %d %s, want its 400 INVALID_REQUEST", resp.StatusCode, body)
	}
	if rec := w.record(); rec.HighestFence != 6 || rec.LastSeq != 1 {
		t.Fatalf("record %+v after the handler's error, want fence 6 segment 1 (nothing of segment 2)", rec)
	}
	if total, applied := w.row(); total != 200 || applied != 2 {
		t.Fatalf("row total=%d applied=%d, want 200, 2", total, applied)
	}

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/invoices/7", strings.NewReader("1"))
	req.Header.Set(identity.DefaultHeader, b.g.Owner)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != fencegate.CodeGrantRequired.Status() {
		t.Fatalf("no grant: %d, want %d GRANT_REQUIRED", r2.StatusCode, fencegate.CodeGrantRequired.Status())
	}
}
