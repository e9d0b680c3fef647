package bolt_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
)

// storedPolicies are policy records as registries before the one Policy
// type (fencegate.Policy) wrote them to the policies bucket, with what
// they must decode to.
var storedPolicies = map[string]fencegate.Policy{
	`{"pattern":"invoice-batch/*","allowedOwners":["spiffe://a/*","b"],"minTtlMs":1000,"maxTtlMs":60000,"opClasses":["write"],"generation":7,"deleted":true,"updatedAt":1764547200000}`: {
		Pattern: "invoice-batch/*", AllowedOwners: []string{"spiffe://a/*", "b"}, MinTTLMs: 1000, MaxTTLMs: 60000,
		OpClasses: []string{"write"}, Generation: 7, Deleted: true, UpdatedAt: 1764547200000,
	},
	`{"pattern":"doc/1","generation":3,"updatedAt":1764547200001}`: {Pattern: "doc/1", Generation: 3, UpdatedAt: 1764547200001},
}

// TestStoredPoliciesStillDecode: policies an older registry stored decode
// into fencegate.Policy field for field, and a policy written now is
// stored in exactly the old bytes, so a data file works across the change
// in both directions.
func TestStoredPoliciesStillDecode(t *testing.T) {
	ctx := context.Background()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "registry.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.DB().Update(func(tx *bbolt.Tx) error {
		for raw, p := range storedPolicies {
			if err := tx.Bucket([]byte("policies")).Put([]byte(p.Pattern), []byte(raw)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []fencegate.Policy
	if err := s.View(ctx, func(tx registry.Tx) (err error) { got, err = tx.Policies(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(storedPolicies) {
		t.Fatalf("read %d policies, want %d", len(got), len(storedPolicies))
	}
	for _, p := range got {
		var want fencegate.Policy
		for _, w := range storedPolicies {
			if w.Pattern == p.Pattern {
				want = w
			}
		}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("decoded %+v, want %+v", p, want)
		}
	}

	// Written again by today's code, each is stored in the old bytes.
	if err := s.DB().Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("policies")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("policies")); return err }); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx registry.Tx) error {
		for _, p := range storedPolicies {
			if err := tx.PutPolicy(p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err = s.DB().View(func(tx *bbolt.Tx) error {
		for raw, p := range storedPolicies {
			if got := string(tx.Bucket([]byte("policies")).Get([]byte(p.Pattern))); got != raw {
				t.Errorf("stored %s, want %s", got, raw)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
