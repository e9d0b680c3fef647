package codec_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// The binary codec against the JSON one (the encoding of earlier files):
// over random records and receipts, every optional member set or not, the
// binary round trip gives exactly what the JSON round trip gives, a JSON
// value decodes to that too, the encoding is canonical and a stamp is the
// receipt's.
func TestDifferentialJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := genRecord().Draw(t, "record")
		bin := codec.EncodeRecord(nil, rec)
		got, err := codec.DecodeRecord(bin)
		if err != nil {
			t.Fatalf("decode binary: %v", err)
		}
		j, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var want store.Record
		if err := json.Unmarshal(j, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("binary round trip\n got %#v\nwant %#v (JSON's)", got, want)
		}
		fromJSON, err := codec.DecodeRecord(j)
		if err != nil || !reflect.DeepEqual(fromJSON, want) {
			t.Fatalf("JSON through the codec: %#v, %v", fromJSON, err)
		}
		if again := codec.EncodeRecord(nil, got); !bytes.Equal(again, bin) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, bin)
		}

		rc := genReceipt().Draw(t, "receipt")
		bin = codec.EncodeReceipt([]byte("prefix"), rc)[len("prefix"):]
		grc, err := codec.DecodeReceipt(bin)
		if err != nil {
			t.Fatalf("decode binary: %v", err)
		}
		if j, err = json.Marshal(rc); err != nil {
			t.Fatal(err)
		}
		var wrc store.Receipt
		if err := json.Unmarshal(j, &wrc); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(grc, wrc) {
			t.Fatalf("binary round trip\n got %#v\nwant %#v (JSON's)", grc, wrc)
		}
		if fj, err := codec.DecodeReceipt(j); err != nil || !reflect.DeepEqual(fj, wrc) {
			t.Fatalf("JSON through the codec: %#v, %v", fj, err)
		}
		if again := codec.EncodeReceipt(nil, grc); !bytes.Equal(again, bin) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, bin)
		}
		for _, v := range [][]byte{bin, j} {
			if st, err := codec.DecodeStamp(v); err != nil || !reflect.DeepEqual(st, wrc.Stamp()) {
				t.Fatalf("stamp of %q: %#v, %v, want %#v", v, st, err, wrc.Stamp())
			}
		}
	})
}

// A time with a zone and a monotonic reading decodes as the store writes
// times (UTC, no monotonic reading): the same instant.
func TestTimeNormalised(t *testing.T) {
	now := time.Now().In(time.FixedZone("X", 3600))
	rec := store.Record{Resource: "r", AcceptedAt: now}
	got, err := codec.DecodeRecord(codec.EncodeRecord(nil, rec))
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Round(0).UTC(); got.AcceptedAt != want {
		t.Fatalf("time %v, want %v", got.AcceptedAt, want)
	}
}

var (
	// minT and maxT bound the times JSON can encode (years 0001..9999).
	minT = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxT = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// genTime: zero, or any UTC instant JSON can hold, at nanosecond precision
// (the store writes normalised times: UTC, no monotonic reading).
func genTime() *rapid.Generator[time.Time] {
	return rapid.Custom(func(t *rapid.T) time.Time {
		if rapid.Bool().Draw(t, "zero") {
			return time.Time{}
		}
		return time.Unix(rapid.Int64Range(minT, maxT).Draw(t, "sec"), rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")).UTC()
	})
}

// genString: empty, any valid UTF-8 (what store validation admits is
// narrower), or an ID-like string.
func genString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.Just(""), rapid.String(), rapid.StringMatching(`[a-z0-9:/._-]{1,80}`))
}

func genEvidence() *rapid.Generator[store.Evidence] {
	return rapid.Custom(func(t *rapid.T) store.Evidence {
		return store.Evidence{IssuerEpoch: rapid.Uint64().Draw(t, "epoch"), BackendRevision: rapid.Uint64().Draw(t, "rev"),
			Lineage: genString().Draw(t, "lineage")}
	})
}

func genMutation() *rapid.Generator[*store.Mutation] {
	return rapid.Custom(func(t *rapid.T) *store.Mutation {
		s := func(l string) string { return genString().Draw(t, l) }
		return &store.Mutation{
			OpRef:         store.OpRef{Resource: s("resource"), Fence: rapid.Uint64().Draw(t, "fence"), Root: s("root"), Seq: rapid.Uint64().Draw(t, "seq")},
			OperationID:   s("op"),
			PayloadDigest: s("payload"),
			GrantDigest:   s("grant"),
			Lease:         s("lease"),
			Owner:         s("owner"),
			Evidence:      genEvidence().Draw(t, "evidence"),
			BegunAt:       genTime().Draw(t, "begun"),
			Deadline:      genTime().Draw(t, "deadline"),
			QuietAt:       genTime().Draw(t, "quiet"),
			Attempts:      rapid.Uint32().Draw(t, "attempts"),
			State:         store.MutationState(rapid.SampledFrom([]string{"", "IN_FLIGHT", "UNKNOWN", "other"}).Draw(t, "state")),
			Cause:         store.UnknownCause(rapid.SampledFrom([]string{"", "NO_ANSWER", "DEADLINE", "STORE_LOSS", "x"}).Draw(t, "cause")),
			UnknownSince:  genTime().Draw(t, "since"),
		}
	})
}

func genRecord() *rapid.Generator[store.Record] {
	return rapid.Custom(func(t *rapid.T) store.Record {
		s := func(l string) string { return genString().Draw(t, l) }
		r := store.Record{
			Resource:     s("resource"),
			HighestFence: rapid.Uint64().Draw(t, "highest"),
			Root:         s("root"),
			Lease:        s("lease"),
			GrantDigest:  s("grant"),
			Evidence:     genEvidence().Draw(t, "evidence"),
			AcceptedAt:   genTime().Draw(t, "accepted"),
			LastSeq:      rapid.Uint64().Draw(t, "lastSeq"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "priors") {
		case 1:
			r.PriorLineages = []store.PriorLineage{} // JSON omits it: nil
		case 2:
			r.PriorLineages = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) store.PriorLineage {
				return store.PriorLineage{Lineage: genString().Draw(t, "l"), Fence: rapid.Uint64().Draw(t, "f")}
			}), 1, 10).Draw(t, "prior")
		}
		if rapid.Bool().Draw(t, "superseded") {
			r.Superseded = store.Superseded{Fence: rapid.Uint64().Draw(t, "sfence"), Root: s("sroot"), LastSeq: rapid.Uint64().Draw(t, "sseq")}
		}
		if rapid.Bool().Draw(t, "inflight") {
			r.InFlight = genMutation().Draw(t, "marker")
		}
		if rapid.Bool().Draw(t, "paused") {
			r.Pause = &store.Pause{
				Reason:   store.PauseReason(rapid.SampledFrom([]string{"", "FENCE_REGRESSION", "OPERATOR", "STORE_LOSS"}).Draw(t, "reason")),
				Detail:   s("detail"),
				At:       genTime().Draw(t, "at"),
				Fence:    rapid.Uint64().Draw(t, "pfence"),
				Evidence: genEvidence().Draw(t, "pevidence"),
			}
		}
		return r
	})
}

func genReceipt() *rapid.Generator[store.Receipt] {
	return rapid.Custom(func(t *rapid.T) store.Receipt {
		s := func(l string) string { return genString().Draw(t, l) }
		r := store.Receipt{
			ID:            s("id"),
			OpRef:         store.OpRef{Resource: s("resource"), Fence: rapid.Uint64().Draw(t, "fence"), Root: s("root"), Seq: rapid.Uint64().Draw(t, "seq")},
			OperationID:   s("op"),
			PayloadDigest: s("payload"),
			GrantDigest:   s("grant"),
			Owner:         s("owner"),
			BackendStatus: rapid.Int().Draw(t, "status"),
			AcceptedAt:    genTime().Draw(t, "accepted"),
			Source:        store.ReceiptSource(rapid.SampledFrom([]string{"", "COMMIT", "RECONCILED"}).Draw(t, "source")),
		}
		r.Response.Status = rapid.Int().Draw(t, "rstatus")
		r.Response.Truncated = rapid.Bool().Draw(t, "truncated")
		switch rapid.IntRange(0, 2).Draw(t, "body") {
		case 1:
			r.Response.Body = []byte{} // JSON omits it: nil
		case 2:
			r.Response.Body = rapid.SliceOfN(rapid.Byte(), 1, 300).Draw(t, "bytes")
		}
		switch rapid.IntRange(0, 2).Draw(t, "header") {
		case 1:
			r.Response.Header = map[string][]string{} // JSON omits it: nil
		case 2:
			n := rapid.IntRange(1, 6).Draw(t, "names")
			r.Response.Header = make(map[string][]string, n)
			for range n {
				var vs []string
				switch rapid.IntRange(0, 2).Draw(t, "values") {
				case 1:
					vs = []string{} // JSON keeps [] apart from null
				case 2:
					vs = rapid.SliceOfN(genString(), 1, 4).Draw(t, "list")
				}
				r.Response.Header[s("name")] = vs
			}
		}
		return r
	})
}
