package verify_test

import (
	"errors"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func TestCheckBinding(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	tok := is.Sign(is.Grant())
	g, _, err := verify.ParseAndVerifyGrant(tok, is.Bundle())
	if err != nil {
		t.Fatal(err)
	}
	res, owner := verifytest.DefaultResource, verifytest.DefaultOwner
	cases := []struct {
		name            string
		resource, owner string
		code            fencegate.Code
		reason          error
	}{
		{name: "bound", resource: res, owner: owner},
		{name: "wrong resource", resource: "orders/acct-43", owner: owner, code: fencegate.CodeResourceMismatch, reason: verify.ErrResourceMismatch},
		{name: "resource prefix", resource: res + "/items", owner: owner, code: fencegate.CodeResourceMismatch, reason: verify.ErrResourceMismatch},
		{name: "resource case differs", resource: "Orders/acct-42", owner: owner, code: fencegate.CodeResourceMismatch, reason: verify.ErrResourceMismatch},
		{name: "empty resource", resource: "", owner: owner, code: fencegate.CodeResourceMismatch, reason: verify.ErrResourceMismatch},
		{name: "wrong owner", resource: res, owner: "spiffe://fencegate.test/ns/default/sa/other", code: fencegate.CodeOwnerMismatch, reason: verify.ErrOwnerMismatch},
		{name: "owner with trailing slash", resource: res, owner: owner + "/", code: fencegate.CodeOwnerMismatch, reason: verify.ErrOwnerMismatch},
		{name: "empty owner", resource: res, owner: "", code: fencegate.CodeOwnerMismatch, reason: verify.ErrOwnerMismatch},
		{name: "both wrong: resource first", resource: "x", owner: "y", code: fencegate.CodeResourceMismatch, reason: verify.ErrResourceMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := verify.CheckBinding(g, tc.resource, tc.owner)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, tc.code, tc.reason)
		})
	}
	wantErr(t, verify.CheckBinding(nil, res, owner), fencegate.CodeGrantInvalid, verify.ErrMalformed)
}

func TestCheckEpoch(t *testing.T) {
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	g := is.Grant(func(g *fencegate.Grant) { g.IssuerEpoch = 5 })
	for _, min := range []uint64{0, 4, 5} {
		if err := verify.CheckEpoch(&g, min); err != nil {
			t.Fatalf("min %d: %v", min, err)
		}
	}
	wantErr(t, verify.CheckEpoch(&g, 6), fencegate.CodeEpochRevoked, verify.ErrEpochRevoked)
	wantErr(t, verify.CheckEpoch(nil, 0), fencegate.CodeGrantInvalid, verify.ErrMalformed)
}

func TestError(t *testing.T) {
	e := &verify.Error{Code: fencegate.CodeGrantInvalid, Reason: verify.ErrUnknownKid, Detail: `kid "k1" is not in the trust bundle`}
	if got, want := e.Error(), `verify: GRANT_INVALID: kid "k1" is not in the trust bundle`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	wrapped := errors.Join(errors.New("proxy"), e)
	if !errors.Is(wrapped, verify.ErrGrantInvalid) || !errors.Is(wrapped, verify.ErrUnknownKid) {
		t.Fatal("errors.Is through a wrapper")
	}
	if errors.Is(e, verify.ErrStatusStale) || errors.Is(e, verify.ErrBadSignature) {
		t.Fatal("unwraps to unrelated sentinels")
	}
	if verify.CodeOf(wrapped) != fencegate.CodeGrantInvalid {
		t.Fatal("CodeOf through a wrapper")
	}
	if verify.CodeOf(nil) != "" || verify.CodeOf(errors.New("x")) != "" {
		t.Fatal("CodeOf of a foreign error")
	}
	noDetail := &verify.Error{Code: fencegate.CodeStatusStale, Reason: verify.ErrProofExpired}
	if got := noDetail.Error(); got != "verify: STATUS_STALE: status proof expired" {
		t.Fatalf("Error() = %q", got)
	}
}
