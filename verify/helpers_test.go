package verify_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

var enc = base64.RawURLEncoding

var codeSentinel = map[fencegate.Code]error{
	fencegate.CodeGrantInvalid:     verify.ErrGrantInvalid,
	fencegate.CodeOwnerMismatch:    verify.ErrOwnerMismatch,
	fencegate.CodeResourceMismatch: verify.ErrResourceMismatch,
	fencegate.CodePolicyMismatch:   verify.ErrPolicyMismatch,
	fencegate.CodeGrantNotHeld:     verify.ErrGrantNotHeld,
	fencegate.CodeEpochRevoked:     verify.ErrEpochRevoked,
	fencegate.CodeStatusStale:      verify.ErrStatusStale,
}

// wantErr asserts that err is a *verify.Error with exactly code and reason,
// and that errors.Is finds both sentinels, and the code as a
// fencegate.Code.
func wantErr(t *testing.T, err error, code fencegate.Code, reason error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %s / %v", code, reason)
	}
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *verify.Error", err, err)
	}
	if ve.Code != code || ve.Reason != reason {
		t.Fatalf("got %s / %v (%v), want %s / %v", ve.Code, ve.Reason, err, code, reason)
	}
	if verify.CodeOf(err) != code {
		t.Fatalf("CodeOf = %q, want %q", verify.CodeOf(err), code)
	}
	if !errors.Is(err, codeSentinel[code]) {
		t.Fatalf("errors.Is(err, code sentinel %v) is false", codeSentinel[code])
	}
	if !errors.Is(err, reason) {
		t.Fatalf("errors.Is(err, %v) is false", reason)
	}
	if !errors.Is(err, code) {
		t.Fatalf("errors.Is(err, fencegate.%s) is false", code)
	}
	if !strings.HasPrefix(err.Error(), "verify: "+string(code)+": ") {
		t.Fatalf("Error() = %q", err.Error())
	}
}

// handToken builds a compact JWS from a literal header and payload, signed
// with alg and key (no signature for jwa.NoSignature).
func handToken(t testing.TB, alg jwa.SignatureAlgorithm, key any, header string, payload []byte) []byte {
	t.Helper()
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(payload)
	var sig []byte
	if alg != jwa.NoSignature {
		s, err := jws.NewSigner(alg)
		if err != nil {
			t.Fatal(err)
		}
		sig, err = s.Sign([]byte(input), key)
		if err != nil {
			t.Fatal(err)
		}
	}
	return []byte(input + "." + enc.EncodeToString(sig))
}

// rawKey returns the raw private key (or secret) of an issuer.
func rawKey(t testing.TB, is *verifytest.Issuer) any {
	t.Helper()
	var raw any
	if err := is.Key().Raw(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// publicBytes returns the public key bytes of an asymmetric issuer: the
// Ed25519 public key, or the uncompressed SEC1 point of a P-256 key.
func publicBytes(t testing.TB, is *verifytest.Issuer) []byte {
	t.Helper()
	switch k := rawKey(t, is).(type) {
	case ed25519.PrivateKey:
		return []byte(k.Public().(ed25519.PublicKey))
	case *ecdsa.PrivateKey:
		e, err := k.PublicKey.ECDH()
		if err != nil {
			t.Fatal(err)
		}
		return e.Bytes()
	default:
		t.Fatalf("not asymmetric: %T", k)
		return nil
	}
}

// publicJWK returns the JSON of the issuer's public JWK.
func publicJWK(t testing.TB, is *verifytest.Issuer) []byte {
	t.Helper()
	pub, err := jwk.PublicKeyOf(is.Key())
	if err != nil {
		t.Fatal(err)
	}
	buf, err := json.Marshal(pub)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

func header(alg, kid, typ string) string {
	return `{"alg":"` + alg + `","kid":"` + kid + `","typ":"` + typ + `"}`
}

// grantJSON marshals g and applies old->new replacements, each of which must
// match exactly once.
func grantJSON(t testing.TB, v any, repl ...string) []byte {
	t.Helper()
	buf, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s := string(buf)
	for i := 0; i+1 < len(repl); i += 2 {
		if strings.Count(s, repl[i]) != 1 {
			t.Fatalf("%q occurs %d times in %s", repl[i], strings.Count(s, repl[i]), s)
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	return []byte(s)
}

// flipPayloadByte decodes the payload segment, changes byte i, re-encodes it
// and keeps header and signature.
func flipPayloadByte(t testing.TB, tok []byte, i int) []byte {
	t.Helper()
	parts := strings.Split(string(tok), ".")
	p, err := enc.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	p[i] ^= 0x01
	parts[1] = enc.EncodeToString(p)
	return []byte(strings.Join(parts, "."))
}

// replacePayload keeps header and signature of tok and puts payload in.
func replacePayload(tok []byte, payload []byte) []byte {
	parts := strings.Split(string(tok), ".")
	parts[1] = enc.EncodeToString(payload)
	return []byte(strings.Join(parts, "."))
}
