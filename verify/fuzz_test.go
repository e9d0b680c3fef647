package verify_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// fuzzKeys are fixed, so a failing input saved under testdata/fuzz
// reproduces with the same keys.
type fuzzKeys struct {
	ed, es, hs *verifytest.Issuer
	bundle     *verify.Bundle
	hsSecret   []byte
}

func newFuzzKeys(t testing.TB) *fuzzKeys {
	t.Helper()
	var seed [32]byte
	copy(seed[:], "fencegate-verify-fuzz-ed25519-ky")
	ed := verifytest.NewEd25519IssuerFromSeed(t, seed, "fuzz-ed")

	d := bytes.Repeat([]byte{0x5a}, 32)
	ecKey, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	es := verifytest.NewIssuerFromKey(t, rawJWK(t, ecKey, "fuzz-es", jwa.ES256))

	secret := []byte("fencegate-verify-fuzz-hs256-secret-0123456789")
	hs := verifytest.NewIssuerFromKey(t, rawJWK(t, secret, "fuzz-hs", jwa.HS256))
	return &fuzzKeys{ed: ed, es: es, hs: hs, bundle: verifytest.BundleOf(t, ed, es, hs), hsSecret: secret}
}

// reasons a rejection may carry; anything else is a bug.
var knownReasons = []error{
	verify.ErrOversized, verify.ErrMalformed, verify.ErrDuplicateMember, verify.ErrMissingClaim,
	verify.ErrUnknownClaim, verify.ErrClaimType, verify.ErrEmptyClaim, verify.ErrUnknownKid,
	verify.ErrAlgNotAllowed, verify.ErrForbiddenHeader, verify.ErrBadSignature, verify.ErrWrongSchema,
}

func checkRejection(t *testing.T, err error) {
	t.Helper()
	var ve *verify.Error
	if !errors.As(err, &ve) || ve.Code != fencegate.CodeGrantInvalid || !errors.Is(err, verify.ErrGrantInvalid) {
		t.Fatalf("rejection is not GRANT_INVALID: %T %v", err, err)
	}
	for _, r := range knownReasons {
		if ve.Reason == r {
			return
		}
	}
	t.Fatalf("unexpected reason %v", ve.Reason)
}

func checkGrantInvariants(t *testing.T, g *fencegate.Grant) {
	t.Helper()
	if g.Schema != fencegate.GrantSchema || g.FenceToken < 1 || g.TTLMs < 1 {
		t.Fatalf("accepted grant breaks invariants: %+v", g)
	}
	for _, s := range []string{g.Issuer, g.GrantID, g.Resource, g.Owner, g.RequestID, g.Lease, g.OperationRoot, g.OpClass} {
		if s == "" {
			t.Fatalf("accepted grant with an empty string claim: %+v", g)
		}
	}
	if g.Lineage != "" && fencegate.ValidateLineage(g.Lineage) != nil {
		t.Fatalf("accepted grant with lineage %q", g.Lineage)
	}
}

func checkStatusInvariants(t *testing.T, st *fencegate.Status) {
	t.Helper()
	if st.Schema != fencegate.StatusSchema || st.FenceToken < 1 || st.ExpiresAt <= st.IssuedAt ||
		!strings.HasPrefix(st.GrantDigest, "sha256:") || len(st.GrantDigest) != 71 {
		t.Fatalf("accepted proof breaks invariants: %+v", st)
	}
	switch st.State {
	case fencegate.StateHeld, fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked:
	default:
		t.Fatalf("accepted proof with state %q", st.State)
	}
}

func grantSeeds(t testing.TB, k *fuzzKeys) [][]byte {
	ed := k.ed
	g := ed.Grant()
	good := ed.Sign(g)
	p := strings.Split(string(good), ".")
	edKey := rawKey(t, ed)
	hdr := header("EdDSA", ed.KeyID(), fencegate.GrantSchema)
	return [][]byte{
		good,
		k.es.Sign(k.es.Grant()),
		k.hs.Sign(k.hs.Grant()),
		ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.FenceToken = 1<<63 + 5 })),
		ed.SignStatus(ed.StatusFor(good, g, verifytest.T0)),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"fenceToken":7`, `"fenceToken":1e3`)),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"fenceToken":7`, `"fenceToken":7,"fenceToken":8`)),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"opClass":`, `"x":{"y":[1,2,{}]},"opClass":`)),
		handToken(t, jwa.NoSignature, nil, header("none", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)),
		handToken(t, jwa.HS256, publicBytes(t, ed), header("HS256", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)),
		handToken(t, jwa.EdDSA, edKey, `{"alg":"EdDSA","crit":["b64"],"b64":false,"kid":"`+ed.KeyID()+`","typ":"lockGrant.v1"}`, grantJSON(t, g)),
		handToken(t, jwa.EdDSA, edKey, hdr[:len(hdr)-1]+`,"alg":"EdDSA"}`, grantJSON(t, g)),
		[]byte(p[0] + "." + p[1]),
		[]byte(p[0] + ".." + p[2]),
		good[:len(good)/2],
		[]byte(`{"protected":"` + p[0] + `","payload":"` + p[1] + `","signature":"` + p[2] + `"}`),
		ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.Lineage = "0123456789abcdef0123456789abcdef" })),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"opClass":`, `"lineage":"","opClass":`)),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"opClass":`, `"lineage":"ABC","opClass":`)),
		ed.SignRaw(fencegate.GrantSchema, grantJSON(t, g, `"opClass":`, `"lineage":null,"opClass":`)),
	}
}

func FuzzParseAndVerifyGrant(f *testing.F) {
	k := newFuzzKeys(f)
	for _, s := range grantSeeds(f, k) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok []byte) {
		g, digest, err := verify.ParseAndVerifyGrant(tok, k.bundle)
		if err != nil {
			if g != nil || digest != "" {
				t.Fatalf("grant %+v / digest %q returned with error %v", g, digest, err)
			}
			checkRejection(t, err)
			return
		}
		checkGrantInvariants(t, g)
		if digest != fencegate.Digest(tok) {
			t.Fatalf("digest %q", digest)
		}
		g2, digest2, err := verify.ParseAndVerifyGrant(bytes.Clone(tok), k.bundle)
		if err != nil || *g2 != *g || digest2 != digest {
			t.Fatalf("accepted token does not re-verify to the same claims: %v", err)
		}
		// The claims survive re-signing by a bundle key.
		g3, _, err := verify.ParseAndVerifyGrant(resign(t, k.hs, fencegate.GrantSchema, *g), k.bundle)
		if err != nil || *g3 != *g {
			t.Fatalf("re-signed claims differ: %v", err)
		}
	})
}

func FuzzParseAndVerifyStatus(f *testing.F) {
	k := newFuzzKeys(f)
	ed := k.ed
	g := ed.Grant()
	grantTok := ed.Sign(g)
	st := ed.StatusFor(grantTok, g, verifytest.T0)
	good := ed.SignStatus(st)
	p := strings.Split(string(good), ".")
	seeds := [][]byte{
		good,
		k.es.SignStatus(st),
		k.hs.SignStatus(st),
		grantTok,
		ed.SignRaw(fencegate.StatusSchema, grantJSON(f, st, `"state":"HELD"`, `"state":"HELD","state":"REVOKED"`)),
		ed.SignRaw(fencegate.StatusSchema, grantJSON(f, st, `"fenceToken":7`, `"fenceToken":-7`)),
		ed.SignRaw(fencegate.StatusSchema, grantJSON(f, st, `"state":"HELD"`, `"state":"held"`)),
		handToken(f, jwa.NoSignature, nil, header("none", ed.KeyID(), fencegate.StatusSchema), grantJSON(f, st)),
		[]byte(p[0] + "." + p[1] + "."),
		good[:len(good)-3],
	}
	for _, s := range seeds {
		f.Add(s)
	}
	pol := verify.StatusPolicy{MaxAge: 2 * time.Second, ClockSkew: time.Second, MinIssuerEpoch: 1}
	digest := fencegate.Digest(grantTok)
	f.Fuzz(func(t *testing.T, tok []byte) {
		got, err := verify.ParseAndVerifyStatus(tok, k.bundle)
		if err != nil {
			if got != nil {
				t.Fatalf("proof %+v returned with error %v", got, err)
			}
			checkRejection(t, err)
			return
		}
		checkStatusInvariants(t, got)
		again, err := verify.ParseAndVerifyStatus(bytes.Clone(tok), k.bundle)
		if err != nil || *again != *got {
			t.Fatalf("accepted proof does not re-verify to the same claims: %v", err)
		}
		re, err := verify.ParseAndVerifyStatus(resign(t, k.hs, fencegate.StatusSchema, *got), k.bundle)
		if err != nil || *re != *got {
			t.Fatalf("re-signed claims differ: %v", err)
		}
		// Must not panic, whatever the times.
		_ = verify.CheckStatus(got, &g, digest, verifytest.T0, pol)
		_ = verify.CheckStatus(got, &g, digest, time.UnixMilli(int64(got.IssuedAt)), pol)
	})
}

// FuzzSignedGrant fuzzes the protected header and the payload behind a
// valid HS256 signature, which random token bytes almost never reach. An
// accepted token must have exactly the expected header, and its claims
// must be what encoding/json reads from the same payload.
func FuzzSignedGrant(f *testing.F) {
	k := newFuzzKeys(f)
	g := k.hs.Grant()
	hdr := header("HS256", k.hs.KeyID(), fencegate.GrantSchema)
	f.Add([]byte(hdr), grantJSON(f, g))
	f.Add([]byte(hdr), grantJSON(f, g, `"fenceToken":7`, `"fenceToken":9223372036854775813`))
	f.Add([]byte(hdr), grantJSON(f, g, `"fenceToken":7`, `"fenceToken":1.0`))
	f.Add([]byte(hdr), grantJSON(f, g, `"owner":`, `"\u006fwner":"x","owner":`))
	f.Add([]byte(hdr), grantJSON(f, g, `"opClass":`, `"extra":null,"opClass":`))
	f.Add([]byte(hdr), grantJSON(f, g, `"opClass":`, `"lineage":"abc123","opClass":`))
	f.Add([]byte(hdr), grantJSON(f, g, `"opClass":`, `"lineage":"abc-123","opClass":`))
	f.Add([]byte(hdr), grantJSON(f, g, `"opClass":`, `"lineage":"a","lineage":"b","opClass":`))
	f.Add([]byte(`{"alg":"HS256","kid":"fuzz-hs","typ":"lockGrant.v1","crit":["b64"],"b64":false}`), grantJSON(f, g))
	f.Add([]byte(`{"alg":"HS256","kid":"fuzz-hs","typ":"lockGrant.v1","kid":"fuzz-ed"}`), grantJSON(f, g))
	f.Add([]byte(`{"alg":"HS256","kid":"fuzz-hs","typ":"lockStatus.v1"}`), grantJSON(f, g))
	f.Fuzz(func(t *testing.T, hdr, payload []byte) {
		tok := handToken(t, jwa.HS256, k.hsSecret, string(hdr), payload)
		got, _, err := verify.ParseAndVerifyGrant(tok, k.bundle)
		if err != nil {
			checkRejection(t, err)
			return
		}
		checkGrantInvariants(t, got)
		var h map[string]any
		if err := json.Unmarshal(hdr, &h); err != nil || len(h) != 3 || h["alg"] != "HS256" || h["kid"] != "fuzz-hs" || h["typ"] != fencegate.GrantSchema {
			t.Fatalf("accepted header %q", hdr)
		}
		var want fencegate.Grant
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil || want != *got {
			t.Fatalf("encoding/json reads %+v (%v), verify read %+v", want, err, *got)
		}
	})
}

// resign signs claims with the issuer's signer inside a fuzz target, where
// the Issuer's own testing.TB (the *testing.F) must not be used.
func resign(t *testing.T, is *verifytest.Issuer, typ string, claims any) []byte {
	t.Helper()
	tok, err := is.Signer().Sign(typ, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
