package store_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

const ledgerShape = "PUT /v1/items/{}"

func TestDecideEnforcementDoesNotAlias(t *testing.T) {
	cur := store.Enforcement{Shape: ledgerShape, History: make([]store.EnforcementEvent, 0, store.MaxEnforcementHistory)}
	cur.History = append(cur.History, store.EnforcementEvent{At: storetest.T0, Kind: store.EnforcementForcedDowngrade})
	keep := cur.Clone()
	next, ch, err := store.DecideEnforcement(&cur, store.EnforcementInput{Shape: ledgerShape, Kind: store.EnforcementEnforce, Now: storetest.T0.Add(time.Hour)})
	changed := ch.Writes()
	if err != nil || !changed || len(next.History) != 2 {
		t.Fatalf("%+v %v %v", next, changed, err)
	}
	if !reflect.DeepEqual(cur, keep) || len(cur.History) != 1 {
		t.Fatalf("input changed: %+v", cur)
	}
	next.History[0].Detail = "mutated"
	if cur.History[:1][0].Detail != "" || cur.History[:2:2][1].Kind != "" {
		t.Fatalf("result shares the input's history: %+v", cur.History[:2:2])
	}
}

func TestDecideEnforcementRefusesMismatchedEntry(t *testing.T) {
	cur := store.Enforcement{Shape: "POST /v1/items"}
	_, _, err := store.DecideEnforcement(&cur, store.EnforcementInput{Shape: ledgerShape, Kind: store.EnforcementEnforce, Now: storetest.T0})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("%v, want ErrCorrupt", err)
	}
	cur = store.Enforcement{Shape: ledgerShape, History: make([]store.EnforcementEvent, store.MaxEnforcementHistory+1)}
	_, _, err = store.DecideEnforcement(&cur, store.EnforcementInput{Shape: ledgerShape, Kind: store.EnforcementEnforce, Now: storetest.T0})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("overlong history: %v, want ErrCorrupt", err)
	}
}

func TestDecideEnforcementNormalisesTime(t *testing.T) {
	now := time.Date(2026, 7, 19, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	next, _, err := store.DecideEnforcement(nil, store.EnforcementInput{Shape: ledgerShape, Kind: store.EnforcementEnforce, Now: now})
	if err != nil || next.EnforcedSince.Location() != time.UTC || !next.EnforcedSince.Equal(now) || next.History[0].At != next.EnforcedSince {
		t.Fatalf("%+v, %v", next, err)
	}
}
