package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// TestDigestCRC32COnlyThroughHTTP: a protected write whose Content-Digest
// carries only crc32c (RFC 9530, the IANA registry's CRC32c as a 4-byte
// big-endian byte sequence) is verified and forwarded; a wrong crc32c is
// 400 DIGEST_MISMATCH with nothing forwarded and nothing stored; a field
// with only algorithms the sidecar cannot verify is refused and says which
// it verifies.
func TestDigestCRC32COnlyThroughHTTP(t *testing.T) {
	f := newFixture(t)
	l := f.acquire("worker-a", "item/1")
	body := "dog" // CRC32c 0x0a72a4df, the IANA registry's example

	wrong := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: body,
		hdr: http.Header{"Content-Digest": {"crc32c=:CnKk3g==:"}}})
	wrong.expect(t, http.StatusBadRequest, fencegate.CodeDigestMismatch)
	if !strings.Contains(wrong.problem.Detail, "crc32c") {
		t.Errorf("detail %q does not name crc32c", wrong.problem.Detail)
	}
	unverifiable := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: body,
		hdr: http.Header{"Content-Digest": {"unixsum=:AAAA:, sha-384=:AAAA:"}}})
	unverifiable.expect(t, http.StatusBadRequest, fencegate.CodeDigestMismatch)
	if !strings.Contains(unverifiable.problem.Detail, "crc32c") || !strings.Contains(unverifiable.problem.Detail, "sha-256") {
		t.Errorf("detail %q does not name the algorithms verified", unverifiable.problem.Detail)
	}
	if n := f.back.count(); n != 0 {
		t.Fatalf("%d refused writes reached the backend", n)
	}
	if rec, ok := f.record("item/1"); ok {
		t.Fatalf("a refused write touched the store: %+v", rec)
	}

	right := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: body,
		hdr: http.Header{"Content-Digest": {"crc32c=:CnKk3w==:"}}})
	right.expect(t, http.StatusCreated, "")
	if f.back.count() != 1 || right.body != "stored dog" {
		t.Fatalf("backend saw %d writes; answer %+v", f.back.count(), right)
	}
	// The backend receives the client's field as it was sent.
	if got := f.back.last().Header.Get("Content-Digest"); got != "crc32c=:CnKk3w==:" {
		t.Fatalf("backend saw Content-Digest %q", got)
	}
	if rec, ok := f.record("item/1"); !ok || rec.LastSeq != 1 {
		t.Fatalf("record after the write: %+v", rec)
	}
}
