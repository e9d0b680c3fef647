package proxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/proxy"
	storemem "github.com/fencegate/fencegate/store/memory"
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
