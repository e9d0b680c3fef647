package proxy_test

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// These tests use only the sidecar's HTTP admin API (its JSON values as
// literals: they are the API), ReloadTrust and files, so that they also
// run against code without trust pins, where they fail: that is what they
// guard. TestFirstUseRefused (trust_firstuse_test.go) uses the new API.

// grantBy signs a grant and a fresh HELD proof for it with is's key.
func grantBy(is *verifytest.Issuer, resource, owner string, fence uint64) (string, string) {
	g := is.Grant(func(g *fencegate.Grant) {
		g.Resource, g.Owner, g.FenceToken = resource, owner, fence
		g.OperationRoot = registry.OperationRoot(resource, fence, g.GrantID)
		g.IssuedAt = uint64(time.Now().UnixMilli())
	})
	tok := is.Sign(g)
	return string(tok), string(is.SignStatus(is.StatusFor(tok, g, time.Now())))
}

// thumbOf is k's RFC 7638 thumbprint, computed here with jwx.
func thumbOf(t *testing.T, k jwk.Key) string {
	t.Helper()
	pub, err := jwk.PublicKeyOf(k)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(sum)
}

// trustRow is a row of GET /v1/trust.
type trustRow struct {
	Kid, Thumbprint, State, How string
	InUseUntil                  time.Time
}

func (f *fixture) trustRows() map[string]trustRow {
	f.t.Helper()
	var l struct{ Keys []trustRow }
	if st := f.adminJSON("GET", "/v1/trust", "", &l); st != 200 {
		f.t.Fatalf("GET /v1/trust: %d", st)
	}
	out := map[string]trustRow{}
	for _, r := range l.Keys {
		out[r.Kid] = r
	}
	return out
}

// writeSignedBundle writes a signed bundle of ks, signed by, issued at iat.
func writeSignedBundle(t *testing.T, path string, by *verifytest.Issuer, iat, exp time.Time, ks ...jwk.Key) {
	t.Helper()
	set, err := keys.Bundle(false, ks...)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := keys.SignBundle(by.Signer(), set, iat, exp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(tok, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) reload(force bool) {
	f.t.Helper()
	if _, err := f.proxy.ReloadTrust(force); err != nil {
		f.t.Fatalf("trust reload: %v", err)
	}
}

// TestAddedBundleKeyIsNotTrustedUntilAccepted is story 8 of issue 19: a
// key added to the trust bundle file was taken silently on reload, and a
// grant it signed with fence 2^62 locked the resource for ever (nothing
// lowers a highest fence). Now the added key is not trusted (its grant is
// GRANT_INVALID, nothing is stored, the gauge counts it) until an
// operator accepts it, by kid and thumbprint.
func TestAddedBundleKeyIsNotTrustedUntilAccepted(t *testing.T) {
	f := newFixture(t)
	added := verifytest.NewIssuer(t, jwa.EdDSA)
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), added.Key())
	f.reload(false)

	const huge = uint64(1) << 62
	tok, proof := grantBy(added, "doc/1", "worker-a", huge)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "lock it"}).expect(t, 401, fencegate.CodeGrantInvalid)
	if rec, found := f.record("doc/1"); found {
		t.Fatalf("a grant of the added key changed the store: %+v", rec)
	}
	if f.back.count() != 0 {
		t.Fatal("a grant of the added key reached the backend")
	}
	if n := f.counter("fencegate_proxy_trust_keys", "state", "unpinned"); n != 1 {
		t.Fatalf("unpinned keys gauge %v, want 1", n)
	}
	if r := f.trustRows()[added.KeyID()]; r.State != "unpinned" || r.Thumbprint != thumbOf(t, added.Key()) {
		t.Fatalf("trust list row of the added key %+v", r)
	}
	// The registry's key, pinned on first use, still verifies.
	t1, g1 := f.crafted("doc/2", "worker-a", 3)
	f.do(call{path: "/v1/docs/2", owner: "worker-a", grant: string(t1), status: f.proof(t1, g1), body: "ok"}).expect(t, 201, "")

	// An accept naming another thumbprint, or a kid the file lacks, is
	// refused and changes nothing.
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"`+added.KeyID()+`","thumbprint":"`+thumbOf(t, f.issuer.Key())+`"}`, nil); st != 409 {
		t.Fatalf("accept with another thumbprint: %d, want 409", st)
	}
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"not-in-the-file"}`, nil); st != 404 {
		t.Fatalf("accept of a kid not in the file: %d, want 404", st)
	}
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"`+added.KeyID()+`","reason":"a\u0000b"}`, nil); st != 400 {
		t.Fatalf("accept with a control character in the reason: %d, want 400", st)
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "lock it"}).expect(t, 401, fencegate.CodeGrantInvalid)

	// The operator's controlled step: accepted by kid and thumbprint.
	var acc struct {
		Trusted bool
		Pin     struct{ How, Thumbprint string }
	}
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"`+added.KeyID()+`","thumbprint":"`+thumbOf(t, added.Key())+`","reason":"registry rotation"}`, &acc); st != 200 {
		t.Fatalf("accept: %d", st)
	}
	if !acc.Trusted || acc.Pin.How != "OPERATOR" || acc.Pin.Thumbprint != thumbOf(t, added.Key()) {
		t.Fatalf("accept answered %+v", acc)
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "accepted"}).expect(t, 201, "")
	if n := f.counter("fencegate_proxy_trust_keys", "state", "unpinned"); n != 0 {
		t.Fatalf("unpinned keys gauge %v after accept", n)
	}
	if r := f.trustRows()[added.KeyID()]; r.State != "trusted" || r.How != "OPERATOR" {
		t.Fatalf("trust list row after accept %+v", r)
	}
}

// TestKeyInUseSurvivesRestart: the "in use until" of a key is stored with
// its pin, so a sidecar restarted on the same bolt file (a second
// proxy.New, its memory empty) still refuses a reload that drops a key
// whose grant may still be held; a key not in use that leaves the file
// is unpinned.
func TestKeyInUseSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "fenced.db")
	open := func() {
		t.Helper()
		s, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.store = s
		if err := f.start(nil); err != nil {
			t.Fatal(err)
		}
	}
	open()
	t.Cleanup(func() { _ = f.store.Close() })
	tok, g := f.crafted("doc/1", "worker-a", 5)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "one"}).expect(t, 201, "")

	// The next key joins; the sidecar restarts on the same store file.
	next := verifytest.NewIssuer(t, jwa.EdDSA)
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), next.Key())
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	open()
	// Dropping the old key while its grant may be held: refused.
	writeBundle(t, f.cfg.Trust.Bundle, next.Key())
	if _, err := f.proxy.ReloadTrust(false); !errors.Is(err, authn.ErrKeyInUse) {
		t.Fatalf("reload dropping a key in use, after a restart: %v", err)
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "2", body: "two"}).expect(t, 201, "")
	if r := f.trustRows()[f.issuer.KeyID()]; !r.InUseUntil.After(time.Now().Add(verifytest.DefaultTTL / 2)) {
		t.Fatalf("the restarted sidecar lists the old key's in-use time as %s", r.InUseUntil)
	}
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"`+next.KeyID()+`"}`, nil); st != 200 {
		t.Fatalf("accept: %d", st)
	}
	// Forced: dropped and unpinned; its grants are refused.
	f.reload(true)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "3", body: "three"}).expect(t, 401, fencegate.CodeGrantInvalid)
	rows := f.trustRows()
	if _, ok := rows[f.issuer.KeyID()]; ok || rows[next.KeyID()].State != "trusted" {
		t.Fatalf("pins after a forced reload %+v", rows)
	}
}

// TestUnusedKeyLeavingTheBundleIsUnpinned: a pinned key that leaves the
// file and signs no grant still held is unpinned at the reload, so it is
// not trusted again when it comes back without a controlled step.
func TestUnusedKeyLeavingTheBundleIsUnpinned(t *testing.T) {
	f := newFixture(t)
	other := verifytest.NewIssuer(t, jwa.EdDSA)
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), other.Key())
	f.reload(false)
	if st := f.adminJSON("POST", "/v1/trust/accept", `{"kid":"`+other.KeyID()+`"}`, nil); st != 200 {
		t.Fatalf("accept: %d", st)
	}
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key())
	f.reload(false)
	if _, ok := f.trustRows()[other.KeyID()]; ok {
		t.Fatal("a key that left the bundle is still pinned")
	}
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), other.Key())
	f.reload(false)
	tok, proof := grantBy(other, "doc/1", "worker-a", 9)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "back"}).expect(t, 401, fencegate.CodeGrantInvalid)
}

// TestSignedBundle: a bundle file signed by a pinned key pins its new
// keys at reload; one signed by the new key itself, by a key not pinned,
// with another typ, expired, or replayed after a key was removed pins
// nothing (and the pinned keys still verify).
func TestSignedBundle(t *testing.T) {
	now := time.Now()
	t.Run("signed by a pinned key", func(t *testing.T) {
		f := newFixture(t)
		added := verifytest.NewIssuer(t, jwa.ES256)
		writeSignedBundle(t, f.cfg.Trust.Bundle, f.issuer, now, now.Add(time.Hour), f.issuer.Key(), added.Key())
		f.reload(false)
		tok, proof := grantBy(added, "doc/1", "worker-a", 4)
		f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "signed"}).expect(t, 201, "")
		if r := f.trustRows()[added.KeyID()]; r.State != "trusted" || r.How != "SIGNED_BUNDLE" {
			t.Fatalf("row of the added key %+v", r)
		}
		if n := f.counter("fencegate_proxy_trust_events_total", "event", "signed_bundle"); n != 1 {
			t.Fatalf("signed_bundle events %v", n)
		}
	})
	stranger := verifytest.NewIssuer(t, jwa.EdDSA)
	for _, c := range []struct {
		name  string
		write func(t *testing.T, f *fixture, added *verifytest.Issuer)
	}{
		{"signed by the new key itself", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			writeSignedBundle(t, f.cfg.Trust.Bundle, added, now, now.Add(time.Hour), f.issuer.Key(), added.Key())
		}},
		{"signed by a key not pinned", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			writeSignedBundle(t, f.cfg.Trust.Bundle, stranger, now, now.Add(time.Hour), f.issuer.Key(), added.Key(), stranger.Key())
		}},
		{"with the typ of a grant", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			set, _ := keys.Bundle(false, f.issuer.Key(), added.Key())
			tok, err := keys.SignBundle(f.issuer.Signer(), set, now, now.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			payload, _ := base64.RawURLEncoding.DecodeString(string(tok[bytes.IndexByte(tok, '.')+1 : bytes.LastIndexByte(tok, '.')]))
			bad, err := f.issuer.Signer().SignPayload(fencegate.GrantSchema, payload)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.cfg.Trust.Bundle, string(bad))
		}},
		{"expired", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			writeSignedBundle(t, f.cfg.Trust.Bundle, f.issuer, now.Add(-2*time.Hour), now.Add(-time.Hour), f.issuer.Key(), added.Key())
		}},
		{"issued in the future", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			writeSignedBundle(t, f.cfg.Trust.Bundle, f.issuer, now.Add(time.Hour), now.Add(2*time.Hour), f.issuer.Key(), added.Key())
		}},
		{"replayed after the key was removed", func(t *testing.T, f *fixture, added *verifytest.Issuer) {
			// Bundle 1 adds the key; a plain file removes it (not in use:
			// unpinned); bundle 1 again, and an older bundle 0, pin nothing.
			old := filepath.Join(t.TempDir(), "bundle0.jws")
			writeSignedBundle(t, old, f.issuer, now.Add(-time.Minute), now.Add(time.Hour), f.issuer.Key(), added.Key())
			writeSignedBundle(t, f.cfg.Trust.Bundle, f.issuer, now, now.Add(time.Hour), f.issuer.Key(), added.Key())
			replay, _ := os.ReadFile(f.cfg.Trust.Bundle)
			f.reload(false)
			if r := f.trustRows()[added.KeyID()]; r.State != "trusted" {
				t.Fatalf("bundle 1 did not pin the key: %+v", r)
			}
			writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key())
			f.reload(false)
			writeFile(t, f.cfg.Trust.Bundle, string(replay))
			f.reload(false)
			if r := f.trustRows()[added.KeyID()]; r.State != "unpinned" {
				t.Fatalf("the replayed bundle pinned the removed key again: %+v", r)
			}
			b0, _ := os.ReadFile(old)
			writeFile(t, f.cfg.Trust.Bundle, string(b0))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			added := verifytest.NewIssuer(t, jwa.EdDSA)
			c.write(t, f, added)
			f.reload(false)
			tok, proof := grantBy(added, "doc/1", "worker-a", 1<<62)
			f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "refused"}).expect(t, 401, fencegate.CodeGrantInvalid)
			if r := f.trustRows()[added.KeyID()]; r.State != "unpinned" {
				t.Fatalf("row of the added key %+v", r)
			}
			if f.counter("fencegate_proxy_trust_events_total", "event", "signed_bundle_refused") < 1 {
				t.Fatal("the refused signed bundle was not counted")
			}
			// The pinned key still verifies.
			t1, g1 := f.crafted("doc/2", "worker-a", 3)
			f.do(call{path: "/v1/docs/2", owner: "worker-a", grant: string(t1), status: f.proof(t1, g1), body: "ok"}).expect(t, 201, "")
		})
	}
}
