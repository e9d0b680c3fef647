package fencegate_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

func TestWriteReadProblem(t *testing.T) {
	rec := httptest.NewRecorder()
	fencegate.WriteProblem(rec, fencegate.NewProblem(fencegate.CodeStaleOwner, "fence 3 < 4").With("highestFence", 4), 1500*time.Millisecond)
	resp := rec.Result()
	if resp.Header.Get("Content-Type") != fencegate.ProblemContentType || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("headers %v", resp.Header)
	}
	p, err := fencegate.ReadProblem(resp)
	if err != nil {
		t.Fatal(err)
	}
	if p.Code != fencegate.CodeStaleOwner || p.Status != http.StatusConflict || p.Type != fencegate.ProblemTypeBase+"STALE_OWNER" ||
		p.Detail != "fence 3 < 4" || p.Extra["highestFence"] != float64(4) {
		t.Fatalf("%+v", p)
	}
}

func TestReadProblemRefusesOtherContent(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/html")
	rec.WriteHeader(502)
	if _, err := fencegate.ReadProblem(rec.Result()); err == nil {
		t.Fatal("an HTML error page was read as a problem")
	}
}

// TestUnknownCodeIsAnswered500: a code missing from the status table is a
// 500, both from Code.Status and from a problem written without a status
// (before, a code missing from the sidecar's table made it write status 0,
// which net/http refuses with a panic).
func TestUnknownCodeIsAnswered500(t *testing.T) {
	unknown := fencegate.Code("NO_SUCH_CODE")
	if unknown.Known() || unknown.Status() != http.StatusInternalServerError || fencegate.Code("").Status() != http.StatusInternalServerError {
		t.Fatalf("unknown code status %d", unknown.Status())
	}
	if p := fencegate.NewProblem(unknown, "x"); p.Status != http.StatusInternalServerError {
		t.Fatalf("NewProblem status %d", p.Status)
	}
	for _, p := range []*fencegate.Problem{
		{Code: unknown},                  // no status at all
		{Code: fencegate.CodeStaleOwner}, // no status: the code's
		{Code: unknown, Status: 7},       // invalid status
		{Code: fencegate.CodeNotFound, Status: 1000},
	} {
		rec := httptest.NewRecorder()
		fencegate.WriteProblem(rec, p, 0)
		want := p.Code.Status()
		if rec.Code != want {
			t.Errorf("problem %+v written with %d, want %d", p, rec.Code, want)
		}
		got, err := fencegate.ReadProblem(rec.Result())
		if err != nil || got.Status != want || got.Code != p.Code {
			t.Errorf("read back %+v, %v", got, err)
		}
	}
}

// TestWithStatus: a problem can carry another status than its code's (the
// registry's BACKEND_UNAVAILABLE is 503); an invalid one is ignored.
func TestWithStatus(t *testing.T) {
	p := fencegate.NewProblem(fencegate.CodeBackendUnavailable, "").WithStatus(http.StatusServiceUnavailable)
	if p.Status != 503 || p.Title != "Service Unavailable" || fencegate.CodeBackendUnavailable.Status() != 502 {
		t.Fatalf("%+v", p)
	}
	if p.WithStatus(0).Status != 503 {
		t.Fatal("an invalid status replaced a valid one")
	}
}
