package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/store"
)

// TestPrintTrustList: the table has the columns of the design (kid,
// thumbprint, alg, state, how, pinned at, in use until), one row per key,
// "-" for what a key does not have.
func TestPrintTrustList(t *testing.T) {
	at := time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	err := printTrustList(&out, authn.TrustList{
		Bundle: authn.TrustBundleInfo{Path: "/etc/fencegate/trust/jwks.json", SHA256: "ab12", Signed: true, SignedBy: "k1", IssuedAt: at, ExpiresAt: at.Add(time.Hour), BundleSeq: 42},
		Keys: []authn.TrustKey{
			{Kid: "k1", Thumbprint: "t1", Alg: "EdDSA", State: authn.KeyTrusted, How: store.TrustFirstUse, PinnedAt: at, InUseUntil: at.Add(time.Minute)},
			{Kid: "k2", Thumbprint: "t2", Alg: "ES256", State: authn.KeyUnpinned},
			{Kid: "k3", Thumbprint: "t3", Alg: "EdDSA", State: authn.KeyConflict, How: store.TrustOperator, PinnedAt: at, PinnedThumbprint: "t9"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"KID", "THUMBPRINT", "ALG", "STATE", "HOW", "PINNED", "AT", "IN", "USE", "UNTIL"},
		{"k1", "t1", "EdDSA", "trusted", "FIRST_USE", "2026-07-19T12:00:00Z", "2026-07-19T12:01:00Z"},
		{"k2", "t2", "ES256", "unpinned", "-", "-", "-"},
		{"k3", "t3", "EdDSA", "conflict", "(pinned", "as", "t9)", "OPERATOR", "2026-07-19T12:00:00Z", "-"},
	}
	if len(lines) < len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	table := lines[len(lines)-len(want):]
	for i, w := range want {
		if got := strings.Fields(table[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
	for _, f := range []string{"signed by:", "k1", "signed-bundle watermark:", "42", "2026-07-19T13:00:00Z"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("header lacks %q:\n%s", f, out.String())
		}
	}
}
