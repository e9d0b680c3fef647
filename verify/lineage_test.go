package verify_test

import (
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

const lineage = "0123456789abcdef0123456789abcdef"

// TestGrantLineageAccepted: the optional "lineage" claim is accepted
// absent (Grant.Lineage "": a grant of a registry older than the claim) or
// well formed, and round-trips exactly.
func TestGrantLineageAccepted(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	for name, l := range map[string]string{
		"absent":       "",
		"registry's":   lineage,
		"one byte":     "z",
		"at the limit": strings.Repeat("9", fencegate.MaxLineageLen),
	} {
		t.Run(name, func(t *testing.T) {
			want := is.Grant(func(g *fencegate.Grant) { g.Lineage = l })
			tok := is.Sign(want)
			if got := strings.Contains(string(grantJSON(t, want)), `"lineage"`); got != (l != "") {
				t.Fatalf("claim present = %v for lineage %q", got, l)
			}
			got, _, err := verify.ParseAndVerifyGrant(tok, is.Bundle())
			if err != nil {
				t.Fatalf("ParseAndVerifyGrant: %v", err)
			}
			if *got != want {
				t.Fatalf("claims\n got %+v\nwant %+v", *got, want)
			}
		})
	}
	// An escaped spelling of a valid value is the same JSON string.
	g := is.Grant(func(g *fencegate.Grant) { g.Lineage = "ab" })
	got, _, err := verify.ParseAndVerifyGrant(is.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"lineage":"ab"`, `"lineage":"\u0061b"`)), is.Bundle())
	if err != nil || got.Lineage != "ab" {
		t.Fatalf("escaped lineage: %+v %v", got, err)
	}
}

// TestGrantLineageRejected: a "lineage" claim that is present but not 1..64
// bytes of [0-9a-z] is GRANT_INVALID with a named reason, each case a
// token signed by the trusted key (so only the claim check can refuse it).
func TestGrantLineageRejected(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	g := is.Grant(func(g *fencegate.Grant) { g.Lineage = lineage })
	with := func(value string) []byte {
		return is.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"lineage":"`+lineage+`"`, `"lineage":`+value))
	}
	for _, c := range []struct {
		name   string
		token  []byte
		reason error
	}{
		{"empty", with(`""`), verify.ErrEmptyClaim},
		{"null", with(`null`), verify.ErrClaimType},
		{"number", with(`7`), verify.ErrClaimType},
		{"true", with(`true`), verify.ErrClaimType},
		{"array", with(`["` + lineage + `"]`), verify.ErrClaimType},
		{"object", with(`{"id":"` + lineage + `"}`), verify.ErrClaimType},
		{"upper case", with(`"` + strings.ToUpper(lineage) + `"`), verify.ErrClaimType},
		{"dash", with(`"0123-4567"`), verify.ErrClaimType},
		{"space", with(`" ` + lineage + `"`), verify.ErrClaimType},
		{"NUL", with(`"ab\u0000"`), verify.ErrClaimType},
		{"non-ASCII letter", with(`"abc\u0430"`), verify.ErrClaimType},
		{"one byte too long", with(`"` + strings.Repeat("a", fencegate.MaxLineageLen+1) + `"`), verify.ErrClaimType},
		{"duplicate", with(`"` + lineage + `","lineage":"` + lineage + `"`), verify.ErrDuplicateMember},
		{"duplicate via escape", with(`"` + lineage + `","\u006cineage":"ff"`), verify.ErrDuplicateMember},
		{"name case differs", is.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"lineage":`, `"Lineage":`)), verify.ErrUnknownClaim},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, digest, err := verify.ParseAndVerifyGrant(c.token, is.Bundle())
			if got != nil || digest != "" {
				t.Fatalf("accepted: %+v", got)
			}
			wantErr(t, err, fencegate.CodeGrantInvalid, c.reason)
		})
	}
}
