package campaign

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
)

// The campaign can fail: each test below runs it against a sidecar with
// one deliberate hole and shows the hole is found (accepted > 0, FAIL, an
// example to reproduce), while the real Sidecar rejects that example.

// noBinding skips verify.CheckBinding: it presents every authentic grant
// on its own resource, for its own owner.
type noBinding struct{ real *Sidecar }

func (c noBinding) Check(t Tuple) error {
	if g, _, err := verify.ParseAndVerifyGrant(t.Grant, c.real.Bundle, c.real.Options...); err == nil {
		t.Resource, t.Owner = g.Resource, g.Owner
	}
	return c.real.Check(t)
}

// algNoneAccepted takes a token whose header says alg "none" (any case)
// at its word, as a permissive JWS library might; everything else goes
// through verify.
type algNoneAccepted struct{ real *Sidecar }

func unsecured(tok []byte, dst any) bool {
	segs, ok := lenientSegments(tok)
	if !ok {
		return false
	}
	var h struct{ Alg string }
	if json.Unmarshal(segs[0], &h) != nil || !strings.EqualFold(strings.TrimSpace(h.Alg), "none") {
		return false
	}
	return json.Unmarshal(segs[1], dst) == nil
}

func (c algNoneAccepted) Check(t Tuple) error {
	s := c.real
	g := new(fencegate.Grant)
	digest := fencegate.Digest(t.Grant)
	if !unsecured(t.Grant, g) {
		var err error
		if g, digest, err = verify.ParseAndVerifyGrant(t.Grant, s.Bundle, s.Options...); err != nil {
			return err
		}
	}
	if err := verify.CheckBinding(g, t.Resource, t.Owner); err != nil {
		return err
	}
	st := new(fencegate.Status)
	if !unsecured(t.Proof, st) {
		var err error
		if st, err = verify.ParseAndVerifyStatus(t.Proof, s.Bundle, s.Options...); err != nil {
			return err
		}
	}
	pol := verify.StatusPolicy{MaxAge: s.MaxAge, ClockSkew: s.ClockSkew, MinIssuerEpoch: max(s.MinIssuerEpoch, s.SeenEpoch, st.IssuerEpoch)}
	return verify.CheckStatus(st, g, digest, s.Now, pol)
}

func weakRun(t *testing.T, chk Checker, kinds ...string) Result {
	t.Helper()
	res := run(t, Config{N: weakPerKind * len(kinds), Seed: 1, Kinds: kinds, Checker: chk})
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if res.Passed() || !strings.HasPrefix(res.Verdict(), "campaign: FAIL") {
		t.Errorf("a weakened sidecar passed the campaign: %s", res.Verdict())
	}
	for _, k := range kinds {
		if res.Kind(k).Accepted == 0 {
			t.Errorf("kind %s found nothing against the weakened sidecar", k)
		}
	}
	if len(res.Examples) == 0 {
		t.Fatalf("FAIL without an example to reproduce")
	}
	real := mustFixture(t).Sidecar()
	for _, e := range res.Examples {
		if e.Verdict != "accepted" {
			t.Errorf("example %d: verdict %q, want accepted", e.Index, e.Verdict)
		}
		if real.Check(e.Tuple) == nil {
			t.Errorf("example %s #%d (%s) is accepted by the real sidecar too", e.Kind, e.Index, e.Variant)
		}
	}
	return res
}

func mustFixture(t *testing.T) *Fixture {
	t.Helper()
	f, err := NewFixture(1)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCampaignFindsMissingBinding(t *testing.T) {
	weakRun(t, noBinding{mustFixture(t).Sidecar()}, "wrong-resource", "wrong-owner")
}

func TestCampaignFindsAlgNone(t *testing.T) {
	res := weakRun(t, algNoneAccepted{mustFixture(t).Sidecar()}, "alg-none")
	// Only the forged pair, or an unsecured proof next to the authentic
	// grant, can pass: an unsecured grant alone still fails the digest
	// binding of its authentic proof.
	for _, e := range res.Examples {
		if !strings.Contains(e.Variant, "proof") {
			t.Errorf("unexpected accepted variant %q", e.Variant)
		}
	}
}

func TestCampaignFindsForgottenEpoch(t *testing.T) {
	s := mustFixture(t).Sidecar()
	s.MinIssuerEpoch, s.SeenEpoch = 0, 0 // a restarted sidecar with no trust.minIssuerEpoch
	weakRun(t, s, "revoked-epoch")
}

func TestCampaignCountsPanics(t *testing.T) {
	real := mustFixture(t).Sidecar()
	chk := checkerFunc(func(tp Tuple) error {
		if len(tp.Grant) == 0 {
			panic("empty grant")
		}
		return real.Check(tp)
	})
	res := run(t, Config{N: 500, Seed: 1, Kinds: []string{"truncation"}, Checker: chk})
	if res.Panicked() == 0 || res.Passed() {
		t.Fatalf("panics not counted: %s", res.Verdict())
	}
	if e := res.Examples[0]; !strings.HasPrefix(e.Verdict, "panic: empty grant") {
		t.Errorf("example verdict %q", e.Verdict)
	}
}
