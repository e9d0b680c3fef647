package proxy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// The fixture's first route, PUT /v1/items/{id}, is enforced when the
// fixture starts, so the ledger records its shape "PUT /v1/items/{}".

func TestLedgerRenamedParameterIsTheSameShape(t *testing.T) {
	f := newFixture(t)
	f.cfg.Routes[0].Path = "/v1/items/{itemId}"
	f.cfg.Routes[0].Resource = "item/{itemId}"
	f.cfg.Routes[0].Mode = proxy.ModeShadow
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("shadow after enforce, parameter renamed: %v, want ErrDowngrade", err)
	}
	// Renamed and still enforced: fine.
	f.cfg.Routes[0].Mode = proxy.ModeEnforce
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerRemovedRouteWithUnmatchedPass(t *testing.T) {
	f := newFixture(t)
	f.cfg.Routes = f.cfg.Routes[1:]
	f.cfg.UnmatchedMutations = "pass"
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("enforced route removed with unmatched mutations passed: %v, want ErrDowngrade", err)
	}
	// Removed but unmatched mutations rejected: nothing passes unchecked.
	f.cfg.UnmatchedMutations = "reject"
	if err := f.start(nil); err != nil {
		t.Fatalf("removed route, unmatched rejected: %v", err)
	}
	ans := f.do(call{path: "/v1/items/1", owner: "worker-a", body: "x"})
	ans.expect(t, 403, fencegate.CodeRouteNotProtected)
	if f.back.count() != 0 {
		t.Fatal("a mutation on the removed shape reached the backend")
	}
}

func TestLedgerRemovedRouteCaughtByShadowRoute(t *testing.T) {
	f := newFixture(t)
	f.cfg.Routes = append(f.cfg.Routes[1:], proxy.RouteConfig{Method: "PUT", Path: "/v1/items/*", Resource: "catch-all", Mode: proxy.ModeShadow,
		Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("enforced shape now caught by a shadow route: %v, want ErrDowngrade", err)
	}
}

// TestLedgerLivesInTheStore: a new pod with an empty dataDir over the same
// fenced store remembers what was enforced.
func TestLedgerLivesInTheStore(t *testing.T) {
	f := newFixture(t)
	f.dataDir = t.TempDir()
	f.cfg.Routes[0].Mode = proxy.ModeOff
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("off after enforce with an empty dataDir: %v, want ErrDowngrade", err)
	}
	entries, err := f.store.Enforcements(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Shape == "PUT /v1/items/{}" && e.Enforced() {
			found = true
		}
	}
	if !found {
		t.Fatalf("ledger %+v lacks the enforced shape", entries)
	}
}

func TestLedgerForcedDowngradeIsRecorded(t *testing.T) {
	f := newFixture(t)
	f.cfg.Routes[0].Mode = proxy.ModeShadow
	if err := f.start([]string{"PUT /v1/items/{whatever}"}); err != nil {
		t.Fatalf("forced downgrade: %v", err)
	}
	entries, _ := f.store.Enforcements(context.Background())
	var e store.Enforcement
	for _, x := range entries {
		if x.Shape == "PUT /v1/items/{}" {
			e = x
		}
	}
	if e.Enforced() || len(e.History) != 2 || e.History[1].Kind != store.EnforcementForcedDowngrade {
		t.Fatalf("ledger entry after a forced downgrade: %+v", e)
	}
	// In shadow now: starting again in shadow needs no force.
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerImportsLegacyFile: enforcement.json of an earlier version is
// moved into the store, then renamed so it is not imported again.
func TestLedgerImportsLegacyFile(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes[0].Mode = proxy.ModeShadow
		c.Routes = append(c.Routes, proxy.RouteConfig{Method: "PATCH", Path: "/v1/legacy/{x}", Resource: "legacy/{x}", Mode: proxy.ModeShadow,
			Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
	})
	path := filepath.Join(f.dataDir, "enforcement.json")
	old := `{"routes":{"PATCH /v1/legacy/{x}":{"enforcedSince":"` + time.Now().UTC().Format(time.RFC3339) + `"}}}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("shadow of a route the legacy ledger enforced: %v, want ErrDowngrade", err)
	}
	if _, err := os.Stat(path + ".imported"); err != nil {
		t.Fatalf("legacy ledger not renamed: %v", err)
	}
}
