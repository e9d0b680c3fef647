package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// FuzzDecideRepair: no panic on any anchor; an invalid one is an
// *InputError; a valid one gives a record that covers it, is paused for
// STORE_LOSS and keeps the highest fence.
func FuzzDecideRepair(f *testing.F) {
	f.Add("r", uint64(5), "root-5", "l2", "lease", storetest.Digest("g"), uint64(2), uint64(3), storetest.Digest("p"), "", int64(30), uint8(1))
	f.Add("r", uint64(9), "other", "", "", "", uint64(0), uint64(0), "", "OPERATOR", int64(0), uint8(2))
	f.Add("r", uint64(0), "", "", "", "", uint64(0), uint64(0), "", "PAUSED", int64(-1), uint8(0))
	f.Add("r\x00", uint64(1<<63), "ro\not", "L", strings.Repeat("l", 300), "md5:x", uint64(fencegate.MaxSeq), uint64(1), "sha256:", "\xff", int64(1<<62), uint8(3))
	f.Fuzz(func(t *testing.T, resource string, fence uint64, root, lineage, lease, grant string, lastSeq, pending uint64, payload, paused string, window int64, which uint8) {
		a := fencegate.Progress{Fence: fence, Root: root, Lineage: lineage, Lease: lease, GrantDigest: grant, LastSeq: lastSeq, Paused: paused}
		if pending > 0 {
			a.Pending = &fencegate.PendingOp{Seq: pending, PayloadDigest: payload}
		}
		recs := []store.Record{
			{},
			{Resource: resource, HighestFence: 5, Root: "root-5", LastSeq: 2, Evidence: store.Evidence{Lineage: "l1"}},
			{Resource: resource, HighestFence: 5, Root: "root-5", LastSeq: 2, InFlight: marker(5, 3, "p", store.MutationInFlight)},
			{Resource: resource, Pause: &store.Pause{Reason: store.PauseFenceRegression, Detail: "d"}},
		}
		rec := recs[int(which)%len(recs)]
		if rec.InFlight != nil {
			rec.InFlight.Resource = resource
		}
		in := store.RepairInput{Resource: resource, Anchored: a, Now: storetest.T0, Window: time.Duration(window)}
		ch, err := store.DecideRepair(rec, in)
		if err != nil {
			var ie *store.InputError
			if in.Validate() == nil || !errors.As(err, &ie) {
				t.Fatalf("refused: %v", err)
			}
			return
		}
		next := ch.Record
		if !store.ProgressOf(next).Covers(a) || next.Pause == nil || next.Pause.Reason != store.PauseStoreLoss || next.HighestFence < rec.HighestFence ||
			len(next.Pause.Detail) > store.MaxDetailLen || next.Resource != resource {
			t.Fatalf("repaired %+v from %+v", next, a)
		}
	})
}

// FuzzDecideTrust: no panic on any change; an invalid one is an
// *InputError; the pins stay sorted by kid, distinct, bounded, and once
// there is one there is always one.
func FuzzDecideTrust(f *testing.F) {
	f.Add("PIN", "k1", strings.Repeat("a", 43), "EdDSA", "FIRST_USE", int64(0), false, uint8(4))
	f.Add("UNPIN", "k1", "", "", "", int64(0), true, uint8(3))
	f.Add("IN_USE", "k1", "", "", "", int64(time.Hour), false, uint8(5))
	f.Add("PIN", "k\x00", "=", "none", "SELF", int64(-1), true, uint8(1))
	f.Fuzz(func(t *testing.T, kind, kid, thumbprint, alg, how string, until int64, force bool, steps uint8) {
		var pins []store.TrustedKey
		for i := range int(steps % 16) {
			in := store.TrustInput{Kind: store.TrustKind(kind), Keys: []store.KeyRef{{Kid: kid, Thumbprint: thumbprint, Alg: alg}},
				How: store.TrustHow(how), Force: force, Now: storetest.T0.Add(time.Duration(i) * time.Minute)}
			if until != 0 {
				in.Until = in.Now.Add(time.Duration(until))
			}
			switch i % 4 { // interleave valid changes of another key
			case 1:
				in = pin(store.TrustOperator, in.Now, key("k-"+string(rune('a'+i)), "b"))
			case 3:
				in = store.TrustInput{Kind: store.TrustUnpin, Keys: []store.KeyRef{{Kid: "k-" + string(rune('a'+i-2))}}, Now: in.Now}
			}
			next, _, err := store.DecideTrust(pins, in)
			if err != nil {
				var ie *store.InputError
				if in.Validate() == nil && errors.As(err, &ie) || in.Validate() != nil && !errors.As(err, &ie) {
					t.Fatalf("error %v for %+v", err, in)
				}
				continue
			}
			if len(next) > store.MaxTrustedKeys || len(pins) > 0 && len(next) == 0 ||
				!slices.IsSortedFunc(next, func(a, b store.TrustedKey) int { return strings.Compare(a.Kid, b.Kid) }) {
				t.Fatalf("pins %+v after %+v", next, in)
			}
			for j := 1; j < len(next); j++ {
				if next[j].Kid == next[j-1].Kid {
					t.Fatalf("kid %q pinned twice", next[j].Kid)
				}
			}
			pins = next
		}
	})
}
