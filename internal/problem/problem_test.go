package problem_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/problem"
)

func TestWriteRead(t *testing.T) {
	rec := httptest.NewRecorder()
	problem.Write(rec, problem.New(409, "STALE_OWNER", "fence 3 < 4").With("highestFence", 4), 1500*time.Millisecond)
	resp := rec.Result()
	if resp.Header.Get("Content-Type") != problem.ContentType || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("headers %v", resp.Header)
	}
	d, err := problem.Read(resp)
	if err != nil {
		t.Fatal(err)
	}
	if d.Code != "STALE_OWNER" || d.Status != 409 || d.Type != problem.TypeBase+"STALE_OWNER" || d.Detail != "fence 3 < 4" || d.Extra["highestFence"] != float64(4) {
		t.Fatalf("%+v", d)
	}
}

func TestReadRefusesOtherContent(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/html")
	rec.WriteHeader(502)
	if _, err := problem.Read(rec.Result()); err == nil {
		t.Fatal("an HTML error page was read as a problem")
	}
}
