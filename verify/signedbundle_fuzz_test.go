package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// bundleReasons a signed bundle's rejection may carry; anything else is a bug.
var bundleReasons = []error{
	verify.ErrOversized, verify.ErrMalformed, verify.ErrDuplicateMember, verify.ErrMissingClaim,
	verify.ErrUnknownClaim, verify.ErrClaimType, verify.ErrUnknownKid, verify.ErrAlgNotAllowed,
	verify.ErrForbiddenHeader, verify.ErrBadSignature, verify.ErrWrongSchema, verify.ErrBundleKeys,
}

func checkBundleRejection(t *testing.T, err error) {
	t.Helper()
	var be *verify.BundleError
	if !errors.As(err, &be) || !errors.Is(err, verify.ErrBadSignedBundle) {
		t.Fatalf("rejection is not a *BundleError: %T %v", err, err)
	}
	for _, r := range bundleReasons {
		if be.Reason == r {
			return
		}
	}
	t.Fatalf("unexpected reason %v", be.Reason)
}

// FuzzSignedBundle: no panic on any input; every rejection is a
// *BundleError with a known reason; a bundle that verifies has 1..64 keys
// and exp > iat, and the unverified parse reads the same bundle.
func FuzzSignedBundle(f *testing.F) {
	k := newFuzzKeys(f)
	set := bundleOf(f, k.ed, k.es)
	good := signBundle(f, k.ed, set, verifytest.T0)
	p := strings.Split(string(good), ".")
	for _, s := range [][]byte{
		good,
		signBundle(f, k.es, set, verifytest.T0),
		signBundle(f, k.hs, set, verifytest.T0),
		k.ed.SignRaw(fencegate.BundleSchema, []byte(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"a","alg":"EdDSA"}]}`)),
		k.ed.SignRaw(fencegate.BundleSchema, []byte(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[{"kty":"OKP","kty":"OKP"}]}`)),
		k.ed.SignRaw(fencegate.BundleSchema, []byte(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[[],{},"x",null]}`)),
		k.ed.SignRaw(fencegate.GrantSchema, []byte(`{"schema":"fencegateBundle.v1","iat":1,"exp":2,"keys":[]}`)),
		k.ed.Sign(k.ed.Grant()),
		[]byte(p[0] + "." + p[1]),
		[]byte(p[0] + "." + p[1] + "."),
		good[:len(good)/2],
	} {
		f.Add(s)
	}
	pinned := verifytest.BundleOf(f, k.ed, k.es, k.hs)
	f.Fuzz(func(t *testing.T, tok []byte) {
		un, uerr := verify.ParseSignedBundleUnverified(tok)
		if uerr != nil {
			if un != nil {
				t.Fatalf("bundle returned with error %v", uerr)
			}
			checkBundleRejection(t, uerr)
		}
		sb, err := verify.ParseAndVerifySignedBundle(tok, pinned)
		if err != nil {
			if sb != nil {
				t.Fatalf("bundle returned with error %v", err)
			}
			checkBundleRejection(t, err)
			return
		}
		if sb.Keys.Len() < 1 || sb.Keys.Len() > fencegate.MaxBundleKeys || sb.ExpiresAt <= sb.IssuedAt || sb.Kid == "" {
			t.Fatalf("accepted bundle breaks invariants: %+v", sb)
		}
		if uerr != nil || un.Kid != sb.Kid || un.IssuedAt != sb.IssuedAt || un.ExpiresAt != sb.ExpiresAt || un.Keys.Len() != sb.Keys.Len() {
			t.Fatalf("the unverified parse disagrees: %+v %v, verified %+v", un, uerr, sb)
		}
	})
}
