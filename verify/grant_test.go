package verify_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

type fixture struct {
	ed, ed2, es, hs, stranger *verifytest.Issuer
	// all trusts ed, ed2, es and hs and allows HS256.
	all *verify.Bundle
	// def trusts ed, ed2 and es with the default allow-list.
	def *verify.Bundle
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{
		ed:       verifytest.NewIssuer(t, jwa.EdDSA),
		ed2:      verifytest.NewIssuer(t, jwa.EdDSA),
		es:       verifytest.NewIssuer(t, jwa.ES256),
		hs:       verifytest.NewIssuer(t, jwa.HS256),
		stranger: verifytest.NewIssuer(t, jwa.EdDSA),
	}
	f.all = verifytest.BundleOf(t, f.ed, f.ed2, f.es, f.hs)
	f.def = verifytest.BundleOf(t, f.ed, f.ed2, f.es)
	return f
}

func TestParseAndVerifyGrantAccepts(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		is     *verifytest.Issuer
		bundle *verify.Bundle
		mut    func(*fencegate.Grant)
	}{
		{name: "EdDSA", is: f.ed, bundle: f.def},
		{name: "EdDSA second key", is: f.ed2, bundle: f.def},
		{name: "ES256", is: f.es, bundle: f.def},
		{name: "HS256 when allowed", is: f.hs, bundle: f.all},
		{name: "fence 2^63+5 exact", is: f.ed, bundle: f.def, mut: func(g *fencegate.Grant) { g.FenceToken = 1<<63 + 5 }},
		{name: "fence 2^53+1 exact", is: f.es, bundle: f.def, mut: func(g *fencegate.Grant) { g.FenceToken = 1<<53 + 1 }},
		{name: "all integers at uint64 max", is: f.ed, bundle: f.def, mut: func(g *fencegate.Grant) {
			g.FenceToken, g.BackendRevision, g.PolicyGeneration, g.IssuerEpoch, g.TTLMs, g.IssuedAt =
				^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)
		}},
		{name: "zero revision, generation, epoch and iat", is: f.ed, bundle: f.def, mut: func(g *fencegate.Grant) {
			g.BackendRevision, g.PolicyGeneration, g.IssuerEpoch, g.IssuedAt = 0, 0, 0, 0
		}},
		{name: "unicode strings", is: f.ed, bundle: f.def, mut: func(g *fencegate.Grant) { g.Resource = "bücher/«42»/\u2028" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var muts []func(*fencegate.Grant)
			if tc.mut != nil {
				muts = append(muts, tc.mut)
			}
			want := tc.is.Grant(muts...)
			tok := tc.is.Sign(want)
			got, digest, err := verify.ParseAndVerifyGrant(tok, tc.bundle)
			if err != nil {
				t.Fatalf("ParseAndVerifyGrant: %v", err)
			}
			if *got != want {
				t.Fatalf("claims\n got %+v\nwant %+v", *got, want)
			}
			if digest != fencegate.Digest(tok) || !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
				t.Fatalf("digest %q", digest)
			}
		})
	}
}

func TestParseAndVerifyGrantRejects(t *testing.T) {
	f := newFixture(t)
	ed := f.ed
	g := ed.Grant()
	good := ed.Sign(g)
	goodParts := strings.Split(string(good), ".")
	edKey := rawKey(t, ed)
	signed := func(payload []byte) []byte { return ed.SignRaw(fencegate.GrantSchema, payload) }
	withFence := func(lit string) []byte { return signed(grantJSON(t, g, `"fenceToken":7`, `"fenceToken":`+lit)) }
	withHeader := func(hdr string) []byte { return handToken(t, jwa.EdDSA, edKey, hdr, grantJSON(t, g)) }
	withoutClaim := func(name string) []byte {
		// drop `"name":value,` from the marshalled grant.
		s := string(grantJSON(t, g))
		i := strings.Index(s, `"`+name+`":`)
		j := strings.Index(s[i:], ",")
		return signed([]byte(s[:i] + s[i+j+1:]))
	}
	status := ed.SignStatus(ed.StatusFor(good, g, verifytest.T0))

	cases := []struct {
		name   string
		token  []byte
		bundle *verify.Bundle
		opts   []verify.Option
		reason error
	}{
		// size and form
		{name: "oversized", token: signed(grantJSON(t, ed.Grant(func(g *fencegate.Grant) { g.OpClass = strings.Repeat("w", 9000) }))), reason: verify.ErrOversized},
		{name: "oversized by option", token: good, opts: []verify.Option{verify.WithMaxTokenBytes(len(good) - 1)}, reason: verify.ErrOversized},
		{name: "oversized garbage is not parsed", token: bytes.Repeat([]byte{'{'}, verify.MaxTokenBytes+1), reason: verify.ErrOversized},
		{name: "empty", token: nil, reason: verify.ErrMalformed},
		{name: "truncated to two segments", token: []byte(goodParts[0] + "." + goodParts[1]), reason: verify.ErrMalformed},
		{name: "truncated in payload", token: good[:len(goodParts[0])+10], reason: verify.ErrMalformed},
		{name: "truncated JSON payload, signed", token: signed(grantJSON(t, g)[:50]), reason: verify.ErrMalformed},
		{name: "four segments", token: append(append([]byte{}, good...), ".x"...), reason: verify.ErrMalformed},
		{name: "trailing newline", token: append(append([]byte{}, good...), '\n'), reason: verify.ErrMalformed},
		{name: "space inside", token: []byte(goodParts[0] + ". " + goodParts[1] + "." + goodParts[2]), reason: verify.ErrMalformed},
		{name: "padded base64", token: []byte(goodParts[0] + "." + goodParts[1] + "." + goodParts[2] + "=="), reason: verify.ErrMalformed},
		{name: "standard base64 alphabet", token: []byte(goodParts[0] + "." + goodParts[1] + "+/." + goodParts[2]), reason: verify.ErrMalformed},
		{name: "non-canonical base64 trailing bits", token: []byte(goodParts[0] + "." + goodParts[1] + "." + goodParts[2][:len(goodParts[2])-1] + "B"), reason: verify.ErrMalformed},
		{name: "empty payload segment", token: []byte(goodParts[0] + ".." + goodParts[2]), reason: verify.ErrMalformed},
		{name: "JSON serialization", token: []byte(`{"payload":"` + goodParts[1] + `","protected":"` + goodParts[0] + `","signature":"` + goodParts[2] + `"}`), reason: verify.ErrMalformed},
		{name: "nil bundle", token: good, bundle: nil, reason: verify.ErrUnknownKid},

		// header
		{name: "header not JSON", token: handToken(t, jwa.EdDSA, edKey, `alg=EdDSA`, grantJSON(t, g)), reason: verify.ErrMalformed},
		{name: "header is an array", token: handToken(t, jwa.EdDSA, edKey, `["EdDSA"]`, grantJSON(t, g)), reason: verify.ErrMalformed},
		{name: "header kid not a string", token: withHeader(`{"alg":"EdDSA","kid":5,"typ":"lockGrant.v1"}`), reason: verify.ErrMalformed},
		{name: "duplicate header member alg", token: withHeader(`{"alg":"EdDSA","kid":"` + ed.KeyID() + `","typ":"lockGrant.v1","alg":"EdDSA"}`), reason: verify.ErrDuplicateMember},
		{name: "duplicate header member kid", token: withHeader(`{"alg":"EdDSA","kid":"` + ed.KeyID() + `","kid":"` + f.ed2.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrDuplicateMember},
		{name: "crit header", token: withHeader(`{"alg":"EdDSA","crit":["exp"],"exp":1,"kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrForbiddenHeader},
		{name: "jwk header", token: withHeader(`{"alg":"EdDSA","jwk":` + string(publicJWK(t, ed)) + `,"kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrForbiddenHeader},
		{name: "jwk header with own key and no kid", token: handToken(t, jwa.EdDSA, rawKey(t, f.stranger), `{"alg":"EdDSA","jwk":`+string(publicJWK(t, f.stranger))+`,"typ":"lockGrant.v1"}`, grantJSON(t, g)), reason: verify.ErrForbiddenHeader},
		{name: "jku header", token: withHeader(`{"alg":"EdDSA","jku":"https://evil.test/jwks.json","kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrForbiddenHeader},
		{name: "x5c header", token: withHeader(`{"alg":"EdDSA","kid":"` + ed.KeyID() + `","typ":"lockGrant.v1","x5c":["MIIB"]}`), reason: verify.ErrForbiddenHeader},
		{name: "x5u header", token: withHeader(`{"alg":"EdDSA","kid":"` + ed.KeyID() + `","typ":"lockGrant.v1","x5u":"https://evil.test/c.pem"}`), reason: verify.ErrForbiddenHeader},
		{name: "b64 false header", token: withHeader(`{"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrForbiddenHeader},
		{name: "unknown header member", token: withHeader(`{"alg":"EdDSA","cty":"JWT","kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrForbiddenHeader},

		// alg and kid
		{name: "alg none", token: handToken(t, jwa.NoSignature, nil, header("none", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "alg none without kid", token: handToken(t, jwa.NoSignature, nil, `{"alg":"none","typ":"lockGrant.v1"}`, grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "alg missing", token: withHeader(`{"kid":"` + ed.KeyID() + `","typ":"lockGrant.v1"}`), reason: verify.ErrAlgNotAllowed},
		{name: "alg lowercase", token: withHeader(header("eddsa", ed.KeyID(), fencegate.GrantSchema)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with EdDSA public key as secret, default bundle", token: handToken(t, jwa.HS256, publicBytes(t, ed), header("HS256", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with EdDSA public key as secret, HS256 allowed", bundle: f.all, token: handToken(t, jwa.HS256, publicBytes(t, ed), header("HS256", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with EdDSA public JWK as secret, HS256 allowed", bundle: f.all, token: handToken(t, jwa.HS256, publicJWK(t, ed), header("HS256", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with ES256 public key as secret, default bundle", token: handToken(t, jwa.HS256, publicBytes(t, f.es), header("HS256", f.es.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with ES256 public key as secret, HS256 allowed", bundle: f.all, token: handToken(t, jwa.HS256, publicBytes(t, f.es), header("HS256", f.es.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "ES256 header with EdDSA kid", token: handToken(t, jwa.ES256, rawKey(t, f.es), header("ES256", ed.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 token, default bundle", token: f.hs.Sign(f.hs.Grant()), reason: verify.ErrAlgNotAllowed},
		{name: "RS256 alg", token: withHeader(header("RS256", ed.KeyID(), fencegate.GrantSchema)), reason: verify.ErrAlgNotAllowed},
		{name: "kid not in bundle", token: f.stranger.Sign(f.stranger.Grant()), reason: verify.ErrUnknownKid},
		{name: "kid missing", token: withHeader(`{"alg":"EdDSA","typ":"lockGrant.v1"}`), reason: verify.ErrUnknownKid},
		{name: "kid empty", token: withHeader(header("EdDSA", "", fencegate.GrantSchema)), reason: verify.ErrUnknownKid},
		{name: "HS256 key unknown to default bundle", token: handToken(t, jwa.HS256, rawKey(t, f.hs), header("HS256", f.hs.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrAlgNotAllowed},

		// typ and schema
		{name: "typ missing", token: withHeader(`{"alg":"EdDSA","kid":"` + ed.KeyID() + `"}`), reason: verify.ErrWrongSchema},
		{name: "typ JWT", token: withHeader(header("EdDSA", ed.KeyID(), "JWT")), reason: verify.ErrWrongSchema},
		{name: "status token presented as grant", token: status, reason: verify.ErrWrongSchema},
		{name: "grant claims with status typ", token: ed.SignRaw(fencegate.StatusSchema, grantJSON(t, g)), reason: verify.ErrWrongSchema},
		{name: "unknown schema", token: ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.Schema = "lockGrant.v2" })), reason: verify.ErrWrongSchema},
		{name: "schema case differs", token: ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.Schema = "LockGrant.v1" })), reason: verify.ErrWrongSchema},

		// signature
		{name: "tampered payload", token: flipPayloadByte(t, good, strings.Index(string(grantJSON(t, g)), `"fenceToken":7`)+13), reason: verify.ErrBadSignature},
		{name: "tampered payload raises fence", token: replacePayload(good, grantJSON(t, g, `"fenceToken":7`, `"fenceToken":8`)), reason: verify.ErrBadSignature},
		{name: "tampered header, same members", token: []byte(enc.EncodeToString([]byte(`{"typ":"lockGrant.v1","alg":"EdDSA","kid":"`+ed.KeyID()+`"}`)) + "." + goodParts[1] + "." + goodParts[2]), reason: verify.ErrBadSignature},
		{name: "swapped kid", token: handToken(t, jwa.EdDSA, edKey, header("EdDSA", f.ed2.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrBadSignature},
		{name: "signature of another message", token: []byte(goodParts[0] + "." + goodParts[1] + "." + strings.Split(string(ed.Sign(ed.Grant())), ".")[2]), reason: verify.ErrBadSignature},
		{name: "empty signature", token: []byte(goodParts[0] + "." + goodParts[1] + "."), reason: verify.ErrBadSignature},
		{name: "ES256 signature truncated", token: func() []byte {
			p := strings.Split(string(f.es.Sign(g)), ".")
			sig, _ := enc.DecodeString(p[2])
			return []byte(p[0] + "." + p[1] + "." + enc.EncodeToString(sig[:63]))
		}(), reason: verify.ErrBadSignature},
		{name: "HS256 wrong secret", bundle: f.all, token: handToken(t, jwa.HS256, bytes.Repeat([]byte{7}, 32), header("HS256", f.hs.KeyID(), fencegate.GrantSchema), grantJSON(t, g)), reason: verify.ErrBadSignature},

		// payload structure
		{name: "payload not JSON", token: signed([]byte("fence=7")), reason: verify.ErrMalformed},
		{name: "payload is an array", token: signed([]byte(`[1,2]`)), reason: verify.ErrMalformed},
		{name: "payload is a string", token: signed([]byte(`"lockGrant.v1"`)), reason: verify.ErrMalformed},
		{name: "payload trailing object", token: signed(append(grantJSON(t, g), `{}`...)), reason: verify.ErrMalformed},
		{name: "payload invalid UTF-8", token: signed(grantJSON(t, g, `"opClass":"write"`, "\"opClass\":\"wr\xffte\"")), reason: verify.ErrMalformed},
		{name: "duplicate payload member", token: signed(grantJSON(t, g, `"fenceToken":7`, `"fenceToken":7,"fenceToken":9`)), reason: verify.ErrDuplicateMember},
		{name: "duplicate payload member via escape", token: signed(grantJSON(t, g, `"owner":`, `"owner":"spiffe://evil.test/x","\u006fwner":`)), reason: verify.ErrDuplicateMember},
		{name: "extra unknown claim", token: signed(grantJSON(t, g, `"opClass":`, `"admin":true,"opClass":`)), reason: verify.ErrUnknownClaim},
		{name: "claim name case differs", token: signed(grantJSON(t, g, `"fenceToken":`, `"FenceToken":`)), reason: verify.ErrUnknownClaim},
		{name: "missing claim owner", token: withoutClaim("owner"), reason: verify.ErrMissingClaim},
		{name: "missing claim fenceToken", token: withoutClaim("fenceToken"), reason: verify.ErrMissingClaim},
		{name: "missing claim schema", token: withoutClaim("schema"), reason: verify.ErrMissingClaim},
		{name: "empty object", token: signed([]byte(`{}`)), reason: verify.ErrMissingClaim},

		// claim types
		{name: "fence as string", token: withFence(`"7"`), reason: verify.ErrClaimType},
		{name: "fence 1e3", token: withFence(`1e3`), reason: verify.ErrClaimType},
		{name: "fence 1.0", token: withFence(`1.0`), reason: verify.ErrClaimType},
		{name: "fence -1", token: withFence(`-1`), reason: verify.ErrClaimType},
		{name: "fence -0", token: withFence(`-0`), reason: verify.ErrClaimType},
		{name: "fence 2^64", token: withFence(`18446744073709551616`), reason: verify.ErrClaimType},
		{name: "fence null", token: withFence(`null`), reason: verify.ErrClaimType},
		{name: "fence true", token: withFence(`true`), reason: verify.ErrClaimType},
		{name: "fence object", token: withFence(`{"n":7}`), reason: verify.ErrClaimType},
		{name: "fence 0", token: withFence(`0`), reason: verify.ErrClaimType},
		{name: "ttlMs 0", token: signed(grantJSON(t, g, `"ttlMs":30000`, `"ttlMs":0`)), reason: verify.ErrClaimType},
		{name: "owner as number", token: signed(grantJSON(t, g, `"owner":"`+verifytest.DefaultOwner+`"`, `"owner":5`)), reason: verify.ErrClaimType},
		{name: "owner as array", token: signed(grantJSON(t, g, `"owner":"`+verifytest.DefaultOwner+`"`, `"owner":["`+verifytest.DefaultOwner+`"]`)), reason: verify.ErrClaimType},
		{name: "schema as number", token: signed(grantJSON(t, g, `"schema":"lockGrant.v1"`, `"schema":1`)), reason: verify.ErrClaimType},
		{name: "empty owner", token: ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.Owner = "" })), reason: verify.ErrEmptyClaim},
		{name: "empty resource", token: ed.Sign(ed.Grant(func(g *fencegate.Grant) { g.Resource = "" })), reason: verify.ErrEmptyClaim},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.bundle
			if b == nil && tc.name != "nil bundle" {
				b = f.def
			}
			g, digest, err := verify.ParseAndVerifyGrant(tc.token, b, tc.opts...)
			if g != nil || digest != "" {
				t.Fatalf("got grant %+v, digest %q with error %v", g, digest, err)
			}
			wantErr(t, err, fencegate.CodeGrantInvalid, tc.reason)
		})
	}
}

func TestWithMaxTokenBytes(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	big := is.Sign(is.Grant(func(g *fencegate.Grant) { g.OpClass = strings.Repeat("w", 9000) }))
	if _, _, err := verify.ParseAndVerifyGrant(big, is.Bundle(), verify.WithMaxTokenBytes(16<<10)); err != nil {
		t.Fatalf("raised limit: %v", err)
	}
	tok := is.Sign(is.Grant())
	if _, _, err := verify.ParseAndVerifyGrant(tok, is.Bundle(), verify.WithMaxTokenBytes(len(tok))); err != nil {
		t.Fatalf("limit equal to the size: %v", err)
	}
	if _, _, err := verify.ParseAndVerifyGrant(tok, is.Bundle(), verify.WithMaxTokenBytes(0), nil); err != nil {
		t.Fatalf("0 keeps the default: %v", err)
	}
}
