package registry_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// TestStoreViewWire: the one conversion of a store's view to its wire form
// (the registry's HTTP API answers it, store/anchor hands it on in
// process) carries every field, and a view read from a Backend (no clock)
// has no now.
func TestStoreViewWire(t *testing.T) {
	ledger := []fencegate.LedgerEntry{{Shape: "PUT /v1/items/{}", EnforcedSince: 10}}
	v := registry.StoreView{
		Record: registry.StoreRecord{Store: "billing", Generation: "g2", RegisteredAt: 11, Losses: 2, LastLoss: "LOSS item/1",
			LastLossAt: 12, Presented: "g3", Acknowledged: 1, AcknowledgedAt: 13},
		Lineage: "abc", Resources: 7, Ledger: ledger, Now: time.UnixMilli(14),
	}
	want := fencegate.StoreAnchor{Store: "billing", Generation: "g2", Lineage: "abc", RegisteredAt: 11, Resources: 7, Losses: 2,
		LastLoss: "LOSS item/1", LastLossAt: 12, Presented: "g3", Acknowledged: 1, AcknowledgedAt: 13, Ledger: ledger, Now: 14}
	if got := v.Wire(); !reflect.DeepEqual(got, want) {
		t.Errorf("Wire() = %+v, want %+v", got, want)
	}
	// Every field of the wire form is set above: a field added to it and
	// not carried by Wire fails here.
	rv := reflect.ValueOf(want)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Errorf("the test leaves fencegate.StoreAnchor.%s zero", rv.Type().Field(i).Name)
		}
	}
	v.Now = time.Time{}
	if got := v.Wire().Now; got != 0 {
		t.Errorf("Wire() of a view without a clock: now = %d, want 0", got)
	}
}
