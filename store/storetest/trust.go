package storetest

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// Thumbprint returns a well-formed RFC 7638 thumbprint made of c.
func Thumbprint(c string) string { return strings.Repeat(c, store.ThumbprintLen) }

func pinKeys(how store.TrustHow, now time.Time, kids ...string) store.TrustInput {
	in := store.TrustInput{Kind: store.TrustPin, How: how, Detail: "bundle", Now: now}
	for _, k := range kids {
		in.Keys = append(in.Keys, store.KeyRef{Kid: k, Thumbprint: Thumbprint(k[len(k)-1:]), Alg: fencegate.AlgEdDSA})
	}
	return in
}

func (f *fixture) trust(in store.TrustInput) []store.TrustedKey {
	f.Helper()
	pins, err := f.s.RecordTrust(f.ctx, in)
	if err != nil {
		f.Fatalf("RecordTrust(%s): %v", in.Kind, err)
	}
	got := f.pins()
	f.check(reflect.DeepEqual(pins, got), "RecordTrust returned %+v, TrustedKeys %+v", pins, got)
	return pins
}

func (f *fixture) pins() []store.TrustedKey {
	f.Helper()
	pins, err := f.s.TrustedKeys(f.ctx)
	if err != nil {
		f.Fatalf("TrustedKeys: %v", err)
	}
	return pins
}

func kids(pins []store.TrustedKey) string {
	var s []string
	for _, p := range pins {
		s = append(s, p.Kid)
	}
	return strings.Join(s, ",")
}

// runTrust checks TrustedKeys and RecordTrust (the rules are DecideTrust's,
// covered by its unit tests; here: stored, atomic, and the same in every
// backend).
func runTrust(t *testing.T, newStore Factory) {
	cases(t, newStore, []testCase{
		{"FirstUseThenControlled", func(f *fixture) {
			f.check(len(f.pins()) == 0, "pins of a new store %+v", f.pins())
			pins := f.trust(pinKeys(store.TrustFirstUse, T0, "k-a", "k-b"))
			f.check(kids(pins) == "k-a,k-b" && pins[0].How == store.TrustFirstUse && pins[0].PinnedAt.Equal(T0) &&
				pins[0].Thumbprint == Thumbprint("a") && pins[0].Alg == fencegate.AlgEdDSA && pins[0].Detail == "bundle", "pins %+v", pins)
			// A bundle with an added key does not pin it by first use...
			f.check(kids(f.trust(pinKeys(store.TrustFirstUse, T0, "k-a", "k-c"))) == "k-a,k-b", "first use pinned on a pinned store")
			// ...an operator does.
			pins = f.trust(pinKeys(store.TrustOperator, T0.Add(time.Hour), "k-c"))
			f.check(kids(pins) == "k-a,k-b,k-c" && pins[2].How == store.TrustOperator, "pins %+v", pins)
			// A kid is one key: another thumbprint is refused, and nothing changes.
			bad := pinKeys(store.TrustSignedBundle, T0, "k-d", "k-a")
			bad.BundleSeq = 1
			bad.Keys[1].Thumbprint = Thumbprint("z")
			_, err := f.s.RecordTrust(f.ctx, bad)
			f.wantErr(err, store.ErrConflict)
			f.check(kids(f.pins()) == "k-a,k-b,k-c", "pins after a refused pin %+v", f.pins())
		}},
		{"InUseAndUnpin", func(f *fixture) {
			f.trust(pinKeys(store.TrustFirstUse, T0, "k-a", "k-b"))
			until := T0.Add(10 * time.Minute)
			pins := f.trust(store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k-a"}}, Until: until, Now: T0})
			f.check(pins[0].InUseUntil.Equal(until), "in use %+v", pins[0])
			f.trust(store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k-a"}}, Until: T0.Add(time.Minute), Now: T0})
			f.check(f.pins()[0].InUseUntil.Equal(until), "IN_USE shortened %+v", f.pins()[0])
			unpin := store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k-a", Thumbprint: Thumbprint("a")}}, Now: T0.Add(time.Minute)}
			_, err := f.s.RecordTrust(f.ctx, unpin)
			f.wantErr(err, store.ErrKeyInUse)
			unpin.Now = until
			f.check(kids(f.trust(unpin)) == "k-b", "after unpin %+v", f.pins())
			_, err = f.s.RecordTrust(f.ctx, store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k-b"}}, Force: true, Now: until})
			f.wantErr(err, store.ErrConflict)
			_, err = f.s.RecordTrust(f.ctx, store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k-a"}}, Until: until.Add(time.Hour), Now: until})
			f.wantErr(err, store.ErrNotFound)
			f.check(kids(f.pins()) == "k-b", "pins %+v", f.pins())
		}},
		{"SignedBundleWatermark", func(f *fixture) {
			// The signed-bundle watermark is stored with the pins and
			// outlives the pin that brought it: a replay is refused.
			f.trust(pinKeys(store.TrustFirstUse, T0, "k-a"))
			signed := pinKeys(store.TrustSignedBundle, T0.Add(time.Minute), "k-b")
			signed.BundleSeq = 42
			pins := f.trust(signed)
			f.check(kids(pins) == "k-a,k-b" && store.BundleSeqOf(pins) == 42 && pins[0].BundleSeq == 42, "pins %+v", pins)
			f.trust(store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k-b"}}, Now: T0.Add(time.Hour)})
			f.check(store.BundleSeqOf(f.pins()) == 42, "watermark after unpin %+v", f.pins())
			_, err := f.s.RecordTrust(f.ctx, signed)
			f.wantErr(err, store.ErrConflict)
			f.check(kids(f.pins()) == "k-a", "pins after a replay %+v", f.pins())
		}},
		{"ConcurrentFirstUsePinsOneBundle", func(f *fixture) {
			// Replicas starting together on an empty store: one bundle wins.
			var wg sync.WaitGroup
			results := make([][]store.TrustedKey, 8)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					kid := "k-" + string(rune('a'+i))
					results[i], _ = f.s.RecordTrust(f.ctx, pinKeys(store.TrustFirstUse, T0, kid, kid+"2"))
				}()
			}
			wg.Wait()
			final := f.pins()
			f.check(len(final) == 2, "pins after concurrent first use %+v", final)
			for i, r := range results {
				f.check(reflect.DeepEqual(r, final), "replica %d saw %+v, stored %+v", i, r, final)
			}
		}},
	})
}

// runTrustReopen checks that the pins survive a reopen.
func runTrustReopen(t *testing.T, newStore Factory, reopen Reopener) {
	f := newFixture(t, newStore(t))
	f.trust(pinKeys(store.TrustFirstUse, T0, "k-a", "k-b"))
	f.trust(store.TrustInput{Kind: store.TrustInUse, Keys: []store.KeyRef{{Kid: "k-b"}}, Until: T0.Add(time.Hour), Now: T0})
	signed := pinKeys(store.TrustSignedBundle, T0, "k-c")
	signed.BundleSeq = 9
	f.trust(signed)
	before := f.pins()
	f.s = reopen(t, f.s)
	after := f.pins()
	f.check(reflect.DeepEqual(after, before), "pins after reopen\n got %+v\nwant %+v", after, before)
}
