package verify_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func TestParseAndVerifyStatusAccepts(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		is     *verifytest.Issuer
		bundle *verify.Bundle
	}{
		{"EdDSA", f.ed, f.def},
		{"ES256", f.es, f.def},
		{"HS256 when allowed", f.hs, f.all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.is.Grant(func(g *fencegate.Grant) { g.FenceToken = 1<<63 + 5 })
			tok := tc.is.Sign(g)
			for _, state := range []string{fencegate.StateHeld, fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked} {
				want := tc.is.StatusFor(tok, g, verifytest.T0)
				want.State = state
				got, err := verify.ParseAndVerifyStatus(tc.is.SignStatus(want), tc.bundle)
				if err != nil {
					t.Fatalf("%s: %v", state, err)
				}
				if *got != want {
					t.Fatalf("claims\n got %+v\nwant %+v", *got, want)
				}
			}
		})
	}
}

func TestParseAndVerifyStatusRejects(t *testing.T) {
	f := newFixture(t)
	ed := f.ed
	g := ed.Grant()
	grantTok := ed.Sign(g)
	st := ed.StatusFor(grantTok, g, verifytest.T0)
	good := ed.SignStatus(st)
	signed := func(payload []byte) []byte { return ed.SignRaw(fencegate.StatusSchema, payload) }
	mut := func(m func(*fencegate.Status)) []byte {
		s := st
		m(&s)
		return ed.SignStatus(s)
	}
	digestAt := strings.Index(string(grantJSON(t, st)), `"grantDigest":"sha256:`) + len(`"grantDigest":"sha256:`)

	cases := []struct {
		name   string
		token  []byte
		bundle *verify.Bundle
		reason error
	}{
		{name: "oversized", token: mut(func(s *fencegate.Status) { s.Lease = strings.Repeat("l", 9000) }), reason: verify.ErrOversized},
		{name: "truncated", token: good[:len(good)/2], reason: verify.ErrMalformed},
		{name: "tampered digest in proof", token: flipPayloadByte(t, good, digestAt), reason: verify.ErrBadSignature},
		{name: "tampered state", token: replacePayload(good, grantJSON(t, st, `"state":"HELD"`, `"state":"HELD" `)), reason: verify.ErrBadSignature},
		{name: "swapped kid", token: handToken(t, jwa.EdDSA, rawKey(t, ed), header("EdDSA", f.ed2.KeyID(), fencegate.StatusSchema), grantJSON(t, st)), reason: verify.ErrBadSignature},
		{name: "alg none", token: handToken(t, jwa.NoSignature, nil, header("none", ed.KeyID(), fencegate.StatusSchema), grantJSON(t, st)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with EdDSA public key as secret", bundle: f.all, token: handToken(t, jwa.HS256, publicBytes(t, ed), header("HS256", ed.KeyID(), fencegate.StatusSchema), grantJSON(t, st)), reason: verify.ErrAlgNotAllowed},
		{name: "HS256 with ES256 public key as secret", bundle: f.all, token: handToken(t, jwa.HS256, publicBytes(t, f.es), header("HS256", f.es.KeyID(), fencegate.StatusSchema), grantJSON(t, st)), reason: verify.ErrAlgNotAllowed},
		{name: "kid not in bundle", token: f.stranger.SignStatus(st), reason: verify.ErrUnknownKid},
		{name: "crit header", token: handToken(t, jwa.EdDSA, rawKey(t, ed), `{"alg":"EdDSA","crit":["x"],"kid":"`+ed.KeyID()+`","typ":"lockStatus.v1","x":1}`, grantJSON(t, st)), reason: verify.ErrForbiddenHeader},
		{name: "duplicate header member", token: handToken(t, jwa.EdDSA, rawKey(t, ed), `{"alg":"EdDSA","kid":"`+ed.KeyID()+`","typ":"lockGrant.v1","typ":"lockStatus.v1"}`, grantJSON(t, st)), reason: verify.ErrDuplicateMember},
		{name: "grant token presented as status", token: grantTok, reason: verify.ErrWrongSchema},
		{name: "status claims with grant typ", token: ed.SignRaw(fencegate.GrantSchema, grantJSON(t, st)), reason: verify.ErrWrongSchema},
		{name: "unknown schema", token: mut(func(s *fencegate.Status) { s.Schema = "lockStatus.v2" }), reason: verify.ErrWrongSchema},
		{name: "duplicate payload member", token: signed(grantJSON(t, st, `"state":"HELD"`, `"state":"REVOKED","state":"HELD"`)), reason: verify.ErrDuplicateMember},
		{name: "extra unknown claim", token: signed(grantJSON(t, st, `"state":"HELD"`, `"state":"HELD","maxAge":999999`)), reason: verify.ErrUnknownClaim},
		{name: "missing claim exp", token: signed(grantJSON(t, st, `,"exp":`+uintStr(st.ExpiresAt), ``)), reason: verify.ErrMissingClaim},
		{name: "exp as float", token: signed(grantJSON(t, st, `"exp":`+uintStr(st.ExpiresAt), `"exp":`+uintStr(st.ExpiresAt)+`.0`)), reason: verify.ErrClaimType},
		{name: "fence 1e3", token: signed(grantJSON(t, st, `"fenceToken":7`, `"fenceToken":1e3`)), reason: verify.ErrClaimType},
		{name: "fence 2^64", token: signed(grantJSON(t, st, `"fenceToken":7`, `"fenceToken":18446744073709551616`)), reason: verify.ErrClaimType},
		{name: "fence 0", token: mut(func(s *fencegate.Status) { s.FenceToken = 0 }), reason: verify.ErrClaimType},
		{name: "unknown state", token: mut(func(s *fencegate.Status) { s.State = "UNKNOWN" }), reason: verify.ErrClaimType},
		{name: "lowercase state", token: mut(func(s *fencegate.Status) { s.State = "held" }), reason: verify.ErrClaimType},
		{name: "exp equal to iat", token: mut(func(s *fencegate.Status) { s.ExpiresAt = s.IssuedAt }), reason: verify.ErrClaimType},
		{name: "exp before iat", token: mut(func(s *fencegate.Status) { s.ExpiresAt = s.IssuedAt - 1 }), reason: verify.ErrClaimType},
		{name: "digest uppercase hex", token: mut(func(s *fencegate.Status) { s.GrantDigest = strings.ToUpper(s.GrantDigest) }), reason: verify.ErrClaimType},
		{name: "digest wrong prefix", token: mut(func(s *fencegate.Status) { s.GrantDigest = "sha512:" + s.GrantDigest[7:] }), reason: verify.ErrClaimType},
		{name: "digest short", token: mut(func(s *fencegate.Status) { s.GrantDigest = s.GrantDigest[:70] }), reason: verify.ErrClaimType},
		{name: "empty state", token: mut(func(s *fencegate.Status) { s.State = "" }), reason: verify.ErrEmptyClaim},
		{name: "empty digest", token: mut(func(s *fencegate.Status) { s.GrantDigest = "" }), reason: verify.ErrEmptyClaim},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.bundle
			if b == nil {
				b = f.def
			}
			got, err := verify.ParseAndVerifyStatus(tc.token, b)
			if got != nil {
				t.Fatalf("got proof %+v with error %v", got, err)
			}
			wantErr(t, err, fencegate.CodeGrantInvalid, tc.reason)
		})
	}
}

func uintStr(n uint64) string { return strconv.FormatUint(n, 10) }

// TestCheckStatus runs every case end to end: real signed grant and proof,
// ParseAndVerifyGrant, ParseAndVerifyStatus, then CheckStatus.
func TestCheckStatus(t *testing.T) {
	f := newFixture(t)
	is := f.ed
	now := verifytest.T0.Add(time.Minute)
	pol := verify.StatusPolicy{MaxAge: 2 * time.Second, MinIssuerEpoch: 1}

	g := is.Grant()
	tok := is.Sign(g)
	other := is.Grant() // another grant on the same resource
	otherTok := is.Sign(other)
	elsewhere := is.Grant(func(g *fencegate.Grant) { g.Resource = "orders/acct-43" })
	elsewhereTok := is.Sign(elsewhere)

	proof := func(m func(*fencegate.Status)) fencegate.Status {
		st := is.StatusFor(tok, g, now.Add(-500*time.Millisecond))
		if m != nil {
			m(&st)
		}
		return st
	}
	ms := func(d time.Duration) uint64 { return uint64(now.Add(d).UnixMilli()) }

	cases := []struct {
		name   string
		st     fencegate.Status
		now    time.Time
		pol    *verify.StatusPolicy
		code   fencegate.Code
		reason error
	}{
		{name: "fresh HELD proof", st: proof(nil)},
		{name: "iat in the future within skew", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(time.Second) }), pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, ClockSkew: time.Second}},
		{name: "age exactly MaxAge", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(-2 * time.Second) })},
		{name: "iat equal to now", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(0) })},

		{name: "proof for another grant (foreign digest)", st: is.StatusFor(otherTok, other, now), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "proof with another grant's digest", st: proof(func(s *fencegate.Status) { s.GrantDigest = fencegate.Digest(otherTok) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "proof for another resource (cross-resource replay)", st: is.StatusFor(elsewhereTok, elsewhere, now), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "right digest, other resource", st: proof(func(s *fencegate.Status) { s.Resource = "orders/acct-43" }), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "right digest, other lease", st: proof(func(s *fencegate.Status) { s.Lease = "lease-99" }), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "right digest, other fence", st: proof(func(s *fencegate.Status) { s.FenceToken = g.FenceToken + 1 }), code: fencegate.CodeStatusStale, reason: verify.ErrProofMismatch},
		{name: "expired proof", st: proof(func(s *fencegate.Status) { s.IssuedAt, s.ExpiresAt = ms(-time.Second), ms(-time.Millisecond) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofExpired},
		{name: "expired proof, exp equal to now", st: proof(func(s *fencegate.Status) { s.IssuedAt, s.ExpiresAt = ms(-time.Second), ms(0) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofExpired},
		{name: "expired REVOKED proof is stale first", st: proof(func(s *fencegate.Status) { s.State, s.ExpiresAt = fencegate.StateRevoked, ms(0) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofExpired},
		{name: "proof too old", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(-2*time.Second - time.Millisecond) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofTooOld},
		{name: "proof from the future", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(time.Millisecond) }), code: fencegate.CodeStatusStale, reason: verify.ErrProofFromFuture},
		{name: "proof from beyond the skew", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(time.Second + time.Millisecond) }), pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, ClockSkew: time.Second}, code: fencegate.CodeStatusStale, reason: verify.ErrProofFromFuture},
		{name: "now before 1970", st: proof(nil), now: time.Unix(-10, 0), code: fencegate.CodeStatusStale, reason: verify.ErrProofFromFuture},
		{name: "proof EXPIRED", st: proof(func(s *fencegate.Status) { s.State = fencegate.StateExpired }), code: fencegate.CodeGrantNotHeld, reason: verify.ErrGrantNotHeld},
		{name: "proof RELEASED", st: proof(func(s *fencegate.Status) { s.State = fencegate.StateReleased }), code: fencegate.CodeGrantNotHeld, reason: verify.ErrGrantNotHeld},
		{name: "proof REVOKED", st: proof(func(s *fencegate.Status) { s.State = fencegate.StateRevoked }), code: fencegate.CodeGrantNotHeld, reason: verify.ErrGrantNotHeld},
		{name: "REVOKED by an epoch bump names the epoch", st: proof(func(s *fencegate.Status) { s.State, s.IssuerEpoch = fencegate.StateRevoked, g.IssuerEpoch+1 }), code: fencegate.CodeEpochRevoked, reason: verify.ErrEpochRevoked},
		{name: "REVOKED by a policy change names the policy", st: proof(func(s *fencegate.Status) { s.State, s.PolicyGeneration = fencegate.StateRevoked, g.PolicyGeneration+1 }), code: fencegate.CodePolicyMismatch, reason: verify.ErrPolicyMismatch},
		{name: "revoked epoch (MinIssuerEpoch)", st: proof(nil), pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, MinIssuerEpoch: 2}, code: fencegate.CodeEpochRevoked, reason: verify.ErrEpochRevoked},
		{name: "registry epoch moved on", st: proof(func(s *fencegate.Status) { s.IssuerEpoch = g.IssuerEpoch + 1 }), code: fencegate.CodeEpochRevoked, reason: verify.ErrEpochRevoked},
		{name: "stale policy generation", st: proof(func(s *fencegate.Status) { s.PolicyGeneration = g.PolicyGeneration + 1 }), code: fencegate.CodePolicyMismatch, reason: verify.ErrPolicyMismatch},
		// NotBefore: what the caller learned of the time judges expiry and
		// age, never the future check.
		{name: "NotBefore earlier than now changes nothing", st: proof(nil), pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, MinIssuerEpoch: 1, NotBefore: now.Add(-time.Hour)}},
		{name: "expired at NotBefore", st: proof(func(s *fencegate.Status) { s.ExpiresAt = ms(time.Second) }),
			pol: &verify.StatusPolicy{MaxAge: time.Hour, MinIssuerEpoch: 1, NotBefore: now.Add(time.Second)}, code: fencegate.CodeStatusStale, reason: verify.ErrProofExpired},
		{name: "too old at NotBefore", st: proof(nil),
			pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, MinIssuerEpoch: 1, NotBefore: now.Add(2 * time.Second)}, code: fencegate.CodeStatusStale, reason: verify.ErrProofTooOld},
		{name: "NotBefore does not excuse a future iat", st: proof(func(s *fencegate.Status) { s.IssuedAt = ms(time.Millisecond) }),
			pol: &verify.StatusPolicy{MaxAge: 2 * time.Second, MinIssuerEpoch: 1, NotBefore: now.Add(time.Second)}, code: fencegate.CodeStatusStale, reason: verify.ErrProofFromFuture},
		{name: "policy without MaxAge", st: proof(nil), pol: &verify.StatusPolicy{}, code: fencegate.CodeStatusStale, reason: verify.ErrInvalidPolicy},
		{name: "policy with negative skew", st: proof(nil), pol: &verify.StatusPolicy{MaxAge: time.Second, ClockSkew: -time.Second}, code: fencegate.CodeStatusStale, reason: verify.ErrInvalidPolicy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			grant, digest, err := verify.ParseAndVerifyGrant(tok, f.def)
			if err != nil {
				t.Fatal(err)
			}
			st, err := verify.ParseAndVerifyStatus(is.SignStatus(tc.st), f.def)
			if err != nil {
				t.Fatal(err)
			}
			p := pol
			if tc.pol != nil {
				p = *tc.pol
			}
			at := now
			if !tc.now.IsZero() {
				at = tc.now
			}
			err = verify.CheckStatus(st, grant, digest, at, p)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("CheckStatus: %v", err)
				}
				return
			}
			wantErr(t, err, tc.code, tc.reason)
		})
	}
}

func TestCheckStatusNilAndEmptyDigest(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	g := is.Grant()
	tok := is.Sign(g)
	st := is.StatusFor(tok, g, verifytest.T0)
	pol := verify.StatusPolicy{MaxAge: time.Second}
	wantErr(t, verify.CheckStatus(nil, &g, fencegate.Digest(tok), verifytest.T0, pol), fencegate.CodeGrantInvalid, verify.ErrMalformed)
	wantErr(t, verify.CheckStatus(&st, nil, fencegate.Digest(tok), verifytest.T0, pol), fencegate.CodeGrantInvalid, verify.ErrMalformed)
	empty := st
	empty.GrantDigest = ""
	wantErr(t, verify.CheckStatus(&empty, &g, "", verifytest.T0, pol), fencegate.CodeStatusStale, verify.ErrProofMismatch)
	if err := verify.CheckStatus(&st, &g, fencegate.Digest(tok), verifytest.T0, pol); err != nil {
		t.Fatal(err)
	}
}

func TestStatusPolicyValidate(t *testing.T) {
	if err := (verify.StatusPolicy{MaxAge: time.Second}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []verify.StatusPolicy{{}, {MaxAge: -1}, {MaxAge: time.Second, ClockSkew: -1}} {
		if err := p.Validate(); !errors.Is(err, verify.ErrInvalidPolicy) {
			t.Fatalf("%+v: %v", p, err)
		}
	}
}
