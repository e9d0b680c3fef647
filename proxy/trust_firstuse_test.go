package proxy_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// TestFirstUseRefused: when the wiring says the store is not known to be
// its own data set, a store with no pins pins nothing: every grant is
// refused until an operator accepts a key.
func TestFirstUseRefused(t *testing.T) {
	f := newFixture(t)
	f.store = storemem.New(storemem.Options{})
	asked := 0
	p, err := proxy.New(proxy.Options{Config: f.cfg, Store: f.store, Metrics: prometheus.NewRegistry(), FirstUseAllowed: func(context.Context) (bool, error) {
		asked++
		return false, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 1 || len(p.TrustKeyIDs()) != 0 {
		t.Fatalf("asked %d, trusted %v", asked, p.TrustKeyIDs())
	}
	if pins, _ := f.store.TrustedKeys(context.Background()); len(pins) != 0 {
		t.Fatalf("pinned %+v", pins)
	}
	out, err := p.AcceptTrust(context.Background(), f.issuer.KeyID(), thumbOf(t, f.issuer.Key()), "after the loss was acknowledged")
	if err != nil || !out.Trusted {
		t.Fatalf("accept: %+v %v", out, err)
	}
	// An error of the check is a refusal too.
	st2 := storemem.New(storemem.Options{})
	p2, err := proxy.New(proxy.Options{Config: f.cfg, Store: st2, Metrics: prometheus.NewRegistry(), FirstUseAllowed: func(context.Context) (bool, error) {
		return true, errors.New("anchor unreachable")
	}})
	if err != nil || len(p2.TrustKeyIDs()) != 0 {
		t.Fatalf("first use despite a failing check: %v %v", p2.TrustKeyIDs(), err)
	}
}

// TestReplicasSharePins: replicas of one shared store see one pin set. A
// key accepted at one replica is trusted at another once its file has the
// key; a replica whose file does not have the key yet does not unpin it
// (it never saw it leave); a key in use through one replica cannot be
// dropped by another's reload.
func TestReplicasSharePins(t *testing.T) {
	f := newFixture(t) // replica B: f.proxy over f.store
	cfgA := f.cfg
	cfgA.Trust.Bundle = filepath.Join(t.TempDir(), "a.jwks")
	writeBundle(t, cfgA.Trust.Bundle, f.issuer.Key())
	a, err := proxy.New(proxy.Options{Config: cfgA, Store: f.store, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	added := verifytest.NewIssuer(t, jwa.EdDSA)
	writeBundle(t, f.cfg.Trust.Bundle, f.issuer.Key(), added.Key())
	f.reload(false)
	if out, err := f.proxy.AcceptTrust(context.Background(), added.KeyID(), added.KeyID(), ""); err != nil || !out.Trusted {
		t.Fatalf("accept at B: %+v %v", out, err)
	}
	// A's file lacks the key: A's reload keeps the pin, A does not trust it.
	if _, err := a.ReloadTrust(false); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(a.TrustKeyIDs(), added.KeyID()) {
		t.Fatal("A trusts a key its file does not have")
	}
	if pins, _ := f.store.TrustedKeys(context.Background()); len(pins) != 2 {
		t.Fatalf("A's reload unpinned the key B accepted: %+v", pins)
	}
	// A's file gets the key: trusted without another step.
	writeBundle(t, cfgA.Trust.Bundle, f.issuer.Key(), added.Key())
	if _, err := a.ReloadTrust(false); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.TrustKeyIDs(), added.KeyID()) {
		t.Fatalf("A does not trust the key accepted at B: %v", a.TrustKeyIDs())
	}
	// A grant of the key accepted through B is in use: A may not drop it.
	tok, proof := grantBy(added, "doc/1", "worker-a", 7)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: tok, status: proof, body: "via B"}).expect(t, 201, "")
	writeBundle(t, cfgA.Trust.Bundle, f.issuer.Key())
	if _, err := a.ReloadTrust(false); !errors.Is(err, authn.ErrKeyInUse) {
		t.Fatalf("A dropping a key in use through B: %v", err)
	}
}
