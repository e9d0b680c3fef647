package verify_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// bundleOf is the public JWK set of the issuers' keys.
func bundleOf(t testing.TB, issuers ...*verifytest.Issuer) jwk.Set {
	t.Helper()
	var ks []jwk.Key
	for _, is := range issuers {
		ks = append(ks, is.Key())
	}
	set, err := keys.Bundle(false, ks...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func signBundle(t testing.TB, by *verifytest.Issuer, set jwk.Set, iat time.Time) []byte {
	t.Helper()
	tok, err := keys.SignBundle(by.Signer(), set, iat, iat.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func wantBundleReason(t *testing.T, name string, err, reason error) {
	t.Helper()
	var be *verify.BundleError
	if !errors.As(err, &be) || !errors.Is(err, verify.ErrBadSignedBundle) || !errors.Is(err, reason) {
		t.Errorf("%s: %v, want a *BundleError for %v", name, err, reason)
	}
}

func TestSignedBundle(t *testing.T) {
	old, added := verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.ES256)
	pinned := old.Bundle() // the keys a sidecar has pinned
	now := verifytest.T0
	tok := signBundle(t, old, bundleOf(t, old, added), now)

	sb, err := verify.ParseAndVerifySignedBundle(tok, pinned)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Kid != old.KeyID() || sb.IssuedAt != uint64(now.UnixMilli()) || sb.ExpiresAt != uint64(now.Add(time.Hour).UnixMilli()) || sb.Keys.Len() != 2 {
		t.Fatalf("bundle %+v", sb)
	}
	if _, ok := sb.Keys.LookupKeyID(added.KeyID()); !ok {
		t.Fatal("the added key is not in the bundle")
	}
	if err := verify.CheckBundleTime(sb, now, time.Second); err != nil {
		t.Fatal(err)
	}
	wantBundleReason(t, "expired", verify.CheckBundleTime(sb, now.Add(time.Hour), time.Second), verify.ErrBundleExpired)
	wantBundleReason(t, "from the future", verify.CheckBundleTime(sb, now.Add(-2*time.Second), time.Second), verify.ErrBundleFromFuture)

	// Unverified, the same content is read, whatever signed it.
	forged := signBundle(t, added, bundleOf(t, old, added), now)
	un, err := verify.ParseSignedBundleUnverified(forged)
	if err != nil || un.Kid != added.KeyID() || un.Keys.Len() != 2 {
		t.Fatalf("unverified: %+v %v", un, err)
	}

	enc := base64.RawURLEncoding.EncodeToString
	segs := strings.Split(string(tok), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(segs[1])
	keysRaw := string(payload[strings.Index(string(payload), `"keys":`)+len(`"keys":`) : len(payload)-1])
	withPayload := func(p string) []byte { return old.SignRaw(fencegate.BundleSchema, []byte(p)) }
	grantTyped, _ := old.Signer().SignPayload(fencegate.GrantSchema, payload)
	for name, c := range map[string]struct {
		token  []byte
		reason error
	}{
		"signed by the new key itself":  {forged, verify.ErrUnknownKid},
		"signed by an unpinned key":     {signBundle(t, verifytest.NewIssuer(t, jwa.EdDSA), bundleOf(t, old, added), now), verify.ErrUnknownKid},
		"wrong typ":                     {grantTyped, verify.ErrWrongSchema},
		"grant typ and a grant payload": {old.Sign(old.Grant()), verify.ErrWrongSchema},
		"header key":                    {[]byte(enc([]byte(`{"alg":"EdDSA","kid":"`+old.KeyID()+`","typ":"fencegateBundle.v1","jwk":{}}`)) + "." + segs[1] + "." + segs[2]), verify.ErrForbiddenHeader},
		"alg none":                      {[]byte(enc([]byte(`{"alg":"none","kid":"`+old.KeyID()+`","typ":"fencegateBundle.v1"}`)) + "." + segs[1] + "."), verify.ErrAlgNotAllowed},
		"bad signature":                 {[]byte(segs[0] + "." + enc(append(payload[:len(payload):len(payload)], ' ')) + "." + segs[2]), verify.ErrBadSignature},
		"oversized":                     {[]byte(strings.Repeat("a", verify.MaxSignedBundleBytes+1)), verify.ErrOversized},
		"not compact":                   {[]byte(string(tok) + ".x"), verify.ErrMalformed},
		"unknown member":                {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":` + keysRaw + `,"seq":3}`), verify.ErrUnknownClaim},
		"duplicate member":              {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"iat":1,"exp":2,"keys":` + keysRaw + `}`), verify.ErrDuplicateMember},
		"no iat":                        {withPayload(`{"schema":"fencegateBundle.v1","exp":2,"keys":` + keysRaw + `}`), verify.ErrMissingClaim},
		"exp before iat":                {withPayload(`{"schema":"fencegateBundle.v1","iat":2,"exp":2,"keys":` + keysRaw + `}`), verify.ErrClaimType},
		"iat negative":                  {withPayload(`{"schema":"fencegateBundle.v1","iat":-1,"exp":2,"keys":` + keysRaw + `}`), verify.ErrClaimType},
		"iat as float":                  {withPayload(`{"schema":"fencegateBundle.v1","iat":1e3,"exp":20000,"keys":` + keysRaw + `}`), verify.ErrClaimType},
		"other schema":                  {withPayload(`{"schema":"lockGrant.v1","iat":1,"exp":2,"keys":` + keysRaw + `}`), verify.ErrWrongSchema},
		"no keys":                       {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[]}`), verify.ErrBundleKeys},
		"keys not an array":             {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":{}}`), verify.ErrBundleKeys},
		"a key not an object":           {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[1]}`), verify.ErrBundleKeys},
		"a key with a duplicate member": {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[{"kty":"OKP","kty":"EC"}]}`), verify.ErrDuplicateMember},
		"a key jwx refuses":             {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[{"kty":"nope"}]}`), verify.ErrBundleKeys},
		"too many keys":                 {withPayload(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[` + strings.Repeat(keysRaw[1:len(keysRaw)-1]+",", 40) + keysRaw[1:] + "}"), verify.ErrBundleKeys},
		"not JSON":                      {withPayload(`{"schema":`), verify.ErrMalformed},
	} {
		_, err := verify.ParseAndVerifySignedBundle(c.token, pinned)
		wantBundleReason(t, name, err, c.reason)
	}
	// Nothing pinned (no key material): refused.
	_, err = verify.ParseAndVerifySignedBundle(tok, nil)
	wantBundleReason(t, "no pinned key", err, verify.ErrUnknownKid)
}
