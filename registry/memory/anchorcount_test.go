package memory_test

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
)

// AnchorCount counts a store's anchors committed and staged, each resource
// once, and no other store's (one whose name the store's extends).
func TestAnchorCount(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	put := func(tx registry.Tx, store string, resources ...string) {
		t.Helper()
		for _, r := range resources {
			if err := tx.PutAnchor(registry.AnchorRecord{Store: store, Resource: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(tx registry.Tx, store string, want uint64) {
		t.Helper()
		n, err := tx.AnchorCount(store)
		if err != nil {
			t.Fatal(err)
		}
		all, err := tx.AnchorsAfter(store, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n != want || uint64(len(all)) != want {
			t.Errorf("store %q: AnchorCount %d, AnchorsAfter %d, want %d", store, n, len(all), want)
		}
	}
	if err := s.Update(ctx, func(tx registry.Tx) error {
		put(tx, "s", "item/a", "item/b")
		put(tx, "s2", "item/a")
		put(tx, "t", "item/x")
		count(tx, "s", 2) // staged only
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx registry.Tx) error {
		put(tx, "s", "item/b", "item/c") // b committed already, c new
		count(tx, "s", 3)
		count(tx, "s2", 1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx registry.Tx) error {
		count(tx, "s", 3)
		count(tx, "s2", 1)
		count(tx, "t", 1)
		count(tx, "none", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
