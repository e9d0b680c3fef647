package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// thumb is a well-formed thumbprint made of c.
func thumb(c string) string { return strings.Repeat(c, store.ThumbprintLen) }

func key(kid, c string) store.KeyRef {
	return store.KeyRef{Kid: kid, Thumbprint: thumb(c), Alg: fencegate.AlgEdDSA}
}

func pin(how store.TrustHow, at time.Time, keys ...store.KeyRef) store.TrustInput {
	return store.TrustInput{Kind: store.TrustPin, Keys: keys, How: how, Detail: "bundle v1", Now: at}
}

func mustTrust(t *testing.T, pins []store.TrustedKey, in store.TrustInput) ([]store.TrustedKey, bool) {
	t.Helper()
	next, ch, err := store.DecideTrust(pins, in)
	changed := ch.Writes()
	if err != nil {
		t.Fatalf("DecideTrust(%s): %v", in.Kind, err)
	}
	return next, changed
}

func TestDecideTrust(t *testing.T) {
	t0, t1 := storetest.T0, storetest.T0.Add(time.Hour)
	// Trust on first use pins the bundle as it is, on a store with no pins.
	pins, changed := mustTrust(t, nil, pin(store.TrustFirstUse, t0, key("k2", "b"), key("k1", "a")))
	want := []store.TrustedKey{
		{Kid: "k1", Thumbprint: thumb("a"), Alg: fencegate.AlgEdDSA, PinnedAt: t0, How: store.TrustFirstUse, Detail: "bundle v1"},
		{Kid: "k2", Thumbprint: thumb("b"), Alg: fencegate.AlgEdDSA, PinnedAt: t0, How: store.TrustFirstUse, Detail: "bundle v1"},
	}
	if !changed || !reflect.DeepEqual(pins, want) {
		t.Fatalf("first use: %v %+v", changed, pins)
	}
	// Only on first use: a bundle with a key added is not pinned by it.
	if again, changed := mustTrust(t, pins, pin(store.TrustFirstUse, t1, key("k1", "a"), key("k3", "c"))); changed || !reflect.DeepEqual(again, want) {
		t.Fatalf("first use on a pinned store: %v %+v", changed, again)
	}
	// An operator pins the added key; pinning a key already pinned changes nothing.
	pins, changed = mustTrust(t, pins, pin(store.TrustOperator, t1, key("k1", "a"), key("k3", "c")))
	if !changed || len(pins) != 3 || pins[2].Kid != "k3" || pins[2].How != store.TrustOperator || !pins[2].PinnedAt.Equal(t1) || !pins[0].PinnedAt.Equal(t0) {
		t.Fatalf("operator pin: %+v", pins)
	}
	if _, changed := mustTrust(t, pins, pin(store.TrustOperator, t1, key("k3", "c"))); changed {
		t.Fatal("pin of a pinned key changed the pins")
	}
	// A kid names one key: another thumbprint or algorithm under it is refused.
	for _, k := range []store.KeyRef{key("k1", "z"), {Kid: "k1", Thumbprint: thumb("a"), Alg: fencegate.AlgES256}} {
		if _, _, err := store.DecideTrust(pins, pin(store.TrustOperator, t1, key("k9", "q"), k)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("kid pinned as another key: %v", err)
		}
	}
	// IN_USE only extends.
	until := t1.Add(10 * time.Minute)
	use := store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k1"}}, Until: until, Now: t1}
	pins, changed = mustTrust(t, pins, use)
	if !changed || !pins[0].InUseUntil.Equal(until) {
		t.Fatalf("in use: %+v", pins[0])
	}
	use.Until = until.Add(-time.Minute)
	if _, changed := mustTrust(t, pins, use); changed {
		t.Fatal("IN_USE shortened InUseUntil")
	}
	use.Keys = []store.KeyRef{{Kid: "k1", Thumbprint: thumb("z")}}
	if _, _, err := store.DecideTrust(pins, use); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("IN_USE with another thumbprint: %v", err)
	}
	use.Keys = []store.KeyRef{{Kid: "k7"}}
	if _, _, err := store.DecideTrust(pins, use); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("IN_USE of a kid not pinned: %v", err)
	}
	// UNPIN is refused while in use, unless forced; never of every pin.
	unpin := store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k1", Thumbprint: thumb("a")}}, Now: t1}
	if _, _, err := store.DecideTrust(pins, unpin); !errors.Is(err, store.ErrKeyInUse) {
		t.Fatalf("unpin in use: %v", err)
	}
	unpin.Now = until
	after, changed := mustTrust(t, pins, unpin)
	if !changed || len(after) != 2 || after[0].Kid != "k2" {
		t.Fatalf("unpin after use: %+v", after)
	}
	unpin.Now, unpin.Force = t1, true
	if after, _ := mustTrust(t, pins, unpin); len(after) != 2 {
		t.Fatalf("forced unpin: %+v", after)
	}
	all := store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k1"}, {Kid: "k2"}, {Kid: "k3"}}, Force: true, Now: until}
	if _, _, err := store.DecideTrust(pins, all); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unpin of every key: %v", err)
	}
	if _, _, err := store.DecideTrust(pins, store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k9"}}, Now: t1}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unpin of a kid not pinned: %v", err)
	}
	// Nothing above changed the input.
	if len(pins) != 3 || !pins[0].InUseUntil.Equal(until) {
		t.Fatalf("input modified: %+v", pins)
	}
	// A stored set that repeats a kid is corrupt.
	if _, _, err := store.DecideTrust(append(pins, pins[0]), use); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("kid stored twice: %v", err)
	}
}

// A signed bundle pins its keys once, at a sequence above the set's
// watermark, which every pin keeps and no UNPIN loses: an old bundle
// replayed cannot bring back a key removed since.
func TestDecideTrustSignedBundleSeq(t *testing.T) {
	t0, t1 := storetest.T0, storetest.T0.Add(time.Hour)
	signed := func(seq uint64, keys ...store.KeyRef) store.TrustInput {
		in := pin(store.TrustSignedBundle, t1, keys...)
		in.BundleSeq = seq
		return in
	}
	pins, _ := mustTrust(t, nil, pin(store.TrustFirstUse, t0, key("k1", "a")))
	if store.BundleSeqOf(pins) != 0 {
		t.Fatalf("watermark of a plain first use: %+v", pins)
	}
	// Bundle 100 adds k2 and k3: pinned, and every pin takes 100.
	pins, changed := mustTrust(t, pins, signed(100, key("k1", "a"), key("k2", "b"), key("k3", "c")))
	if !changed || len(pins) != 3 || pins[1].How != store.TrustSignedBundle {
		t.Fatalf("signed bundle 100: %+v", pins)
	}
	for _, p := range pins {
		if p.BundleSeq != 100 {
			t.Fatalf("pin without the watermark: %+v", pins)
		}
	}
	// Taken again (another replica): nothing changes.
	if again, changed := mustTrust(t, pins, signed(100, key("k2", "b"), key("k3", "c"))); changed || !reflect.DeepEqual(again, pins) {
		t.Fatalf("bundle 100 again: %v %+v", changed, again)
	}
	// k2 removed (unpinned); the watermark stays with the other pins.
	pins, _ = mustTrust(t, pins, store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k2"}}, Now: t1})
	if store.BundleSeqOf(pins) != 100 {
		t.Fatalf("watermark after unpin: %+v", pins)
	}
	// Bundle 100 replayed would pin k2 again, an older one too: refused.
	for _, in := range []store.TrustInput{signed(100, key("k2", "b")), signed(99, key("k2", "b")), signed(50, key("k1", "a"))} {
		if _, _, err := store.DecideTrust(pins, in); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("replay of bundle %d: %v", in.BundleSeq, err)
		}
	}
	// An operator pin keeps the watermark; a later bundle raises it.
	pins, _ = mustTrust(t, pins, pin(store.TrustOperator, t1, key("k4", "d")))
	if store.BundleSeqOf(pins) != 100 || pins[2].BundleSeq != 100 {
		t.Fatalf("operator pin: %+v", pins)
	}
	pins, changed = mustTrust(t, pins, signed(101, key("k2", "b")))
	if !changed || store.BundleSeqOf(pins) != 101 || len(pins) != 4 {
		t.Fatalf("bundle 101: %+v", pins)
	}
	// A first use of a signed bundle starts at its sequence.
	first := pin(store.TrustFirstUse, t0, key("k1", "a"))
	first.BundleSeq = 7
	if pins, _ := mustTrust(t, nil, first); store.BundleSeqOf(pins) != 7 {
		t.Fatalf("first use of signed bundle 7: %+v", pins)
	}
}

func TestDecideTrustBound(t *testing.T) {
	var keys []store.KeyRef
	for i := range store.MaxTrustedKeys {
		keys = append(keys, store.KeyRef{Kid: "k" + u(uint64(i)), Thumbprint: thumb("a"), Alg: fencegate.AlgES256})
	}
	pins, _ := mustTrust(t, nil, pin(store.TrustOperator, storetest.T0, keys...))
	if _, _, err := store.DecideTrust(pins, pin(store.TrustOperator, storetest.T0, key("one-more", "b"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("pin past the bound: %v", err)
	}
}

func TestTrustInputValidate(t *testing.T) {
	good := pin(store.TrustOperator, storetest.T0, key("k1", "a"))
	use := store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k1"}}, Until: storetest.T0.Add(time.Hour), Now: storetest.T0}
	for name, c := range map[string]struct {
		in    store.TrustInput
		f     func(*store.TrustInput)
		field string
	}{
		"kind":            {good, func(in *store.TrustInput) { in.Kind = "pin" }, "kind"},
		"no keys":         {good, func(in *store.TrustInput) { in.Keys = nil }, "keys"},
		"empty kid":       {good, func(in *store.TrustInput) { in.Keys[0].Kid = "" }, "keys.kid"},
		"control in kid":  {good, func(in *store.TrustInput) { in.Keys[0].Kid = "k\n" }, "keys.kid"},
		"long kid":        {good, func(in *store.TrustInput) { in.Keys[0].Kid = strings.Repeat("k", store.MaxKidLen+1) }, "keys.kid"},
		"kid twice":       {good, func(in *store.TrustInput) { in.Keys = append(in.Keys, in.Keys[0]) }, "keys.kid"},
		"no thumbprint":   {good, func(in *store.TrustInput) { in.Keys[0].Thumbprint = "" }, "keys.thumbprint"},
		"short thumb":     {good, func(in *store.TrustInput) { in.Keys[0].Thumbprint = thumb("a")[1:] }, "keys.thumbprint"},
		"padded thumb":    {good, func(in *store.TrustInput) { in.Keys[0].Thumbprint = thumb("a")[1:] + "=" }, "keys.thumbprint"},
		"alg":             {good, func(in *store.TrustInput) { in.Keys[0].Alg = "none" }, "keys.alg"},
		"how":             {good, func(in *store.TrustInput) { in.How = "" }, "how"},
		"detail":          {good, func(in *store.TrustInput) { in.Detail = "a\x7f" }, "detail"},
		"force on pin":    {good, func(in *store.TrustInput) { in.Force = true }, "force"},
		"until on pin":    {good, func(in *store.TrustInput) { in.Until = storetest.T0.Add(time.Hour) }, "until"},
		"now":             {good, func(in *store.TrustInput) { in.Now = time.Time{} }, "now"},
		"alg on use":      {use, func(in *store.TrustInput) { in.Keys[0].Alg = fencegate.AlgEdDSA }, "keys.alg"},
		"how on use":      {use, func(in *store.TrustInput) { in.How = store.TrustOperator }, "how"},
		"until not after": {use, func(in *store.TrustInput) { in.Until = in.Now }, "until"},
		"until far":       {use, func(in *store.TrustInput) { in.Until = in.Now.Add(store.MaxInUseAhead + time.Second) }, "until"},
		"no until":        {use, func(in *store.TrustInput) { in.Until = time.Time{} }, "until"},
		"seq on operator": {good, func(in *store.TrustInput) { in.BundleSeq = 1 }, "bundleSeq"},
		"seq on use":      {use, func(in *store.TrustInput) { in.BundleSeq = 1 }, "bundleSeq"},
		"signed no seq":   {good, func(in *store.TrustInput) { in.How = store.TrustSignedBundle }, "bundleSeq"},
	} {
		in := c.in
		in.Keys = append([]store.KeyRef(nil), c.in.Keys...)
		c.f(&in)
		_, _, err := store.DecideTrust(nil, in)
		var ie *store.InputError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v, want an input error of %s", name, err, c.field)
		}
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := use.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRecordsQueryValidate(t *testing.T) {
	for q, ok := range map[store.RecordsQuery]bool{
		{Limit: 1}: true, {After: "a/b", Limit: store.MaxRecordsLimit}: true,
		{Limit: 0}: false, {Limit: -1}: false, {Limit: store.MaxRecordsLimit + 1}: false, {After: "a\x00", Limit: 1}: false,
		{After: strings.Repeat("r", fencegate.MaxResourceLen+1), Limit: 1}: false,
	} {
		err := q.Validate()
		if ok != (err == nil) || !ok && !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%+v: %v", q, err)
		}
	}
}
