package registry_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// TestDecideInit: a process's start gives a data set without a lineage the
// fresh one, never changes a lineage, raises the global floor and never
// lowers it, and writes nothing when nothing changes.
func TestDecideInit(t *testing.T) {
	for _, c := range []struct {
		name        string
		meta        registry.Meta
		in          registry.InitInput
		wantLineage string
		wantFloor   uint64
		writes      bool
		err         error
	}{
		{"empty data set: lineage written", registry.Meta{}, registry.InitInput{Lineage: candidateLineage}, candidateLineage, 0, true, nil},
		{"lineage kept", registry.Meta{Lineage: metaLineage, Revision: 9}, registry.InitInput{Lineage: candidateLineage}, metaLineage, 0, false, nil},
		{"floor raised", registry.Meta{Lineage: metaLineage, FenceFloor: 10}, registry.InitInput{Lineage: candidateLineage, FenceFloor: 500}, metaLineage, 500, true, nil},
		{"floor never lowered", registry.Meta{Lineage: metaLineage, FenceFloor: 900}, registry.InitInput{Lineage: candidateLineage, FenceFloor: 500}, metaLineage, 900, false, nil},
		{"floor equal: no write", registry.Meta{Lineage: metaLineage, FenceFloor: 500}, registry.InitInput{FenceFloor: 500}, metaLineage, 500, false, nil},
		{"both on an empty data set", registry.Meta{}, registry.InitInput{Lineage: candidateLineage, FenceFloor: 7}, candidateLineage, 7, true, nil},
		{"no lineage to give", registry.Meta{}, registry.InitInput{}, "", 0, false, registry.ErrInvalidInput},
		{"malformed lineage to give", registry.Meta{}, registry.InitInput{Lineage: "Z-1"}, "", 0, false, registry.ErrInvalidInput},
		{"a kept lineage needs no candidate", registry.Meta{Lineage: metaLineage}, registry.InitInput{FenceFloor: 3}, metaLineage, 3, true, nil},
		{"epoch raised", registry.Meta{Lineage: metaLineage, IssuerEpoch: 2}, registry.InitInput{MinIssuerEpoch: 7}, metaLineage, 0, true, nil},
		{"epoch never lowered", registry.Meta{Lineage: metaLineage, IssuerEpoch: 9}, registry.InitInput{MinIssuerEpoch: 7}, metaLineage, 0, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ch, err := registry.DecideInit(c.meta, c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) || !ch.Empty() {
					t.Fatalf("err %v, change %+v; want %v and no change", err, ch, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Lineage != c.wantLineage || m.FenceFloor != c.wantFloor || m.IssuerEpoch < max(1, c.in.MinIssuerEpoch, c.meta.IssuerEpoch) ||
				m.IssuerEpoch > max(1, c.in.MinIssuerEpoch, c.meta.IssuerEpoch) {
				t.Fatalf("meta %+v, want lineage %q floor %d", m, c.wantLineage, c.wantFloor)
			}
			if c.writes != !ch.Empty() {
				t.Fatalf("change %+v, want a write: %v", ch, c.writes)
			}
			if c.writes && (*ch.Meta != m || m.Revision != c.meta.Revision+1) {
				t.Fatalf("writes %+v, answers %+v (revision from %d)", *ch.Meta, m, c.meta.Revision)
			}
		})
	}
}
