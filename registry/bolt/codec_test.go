package bolt

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// randString returns up to n lowercase letters (JSON keeps them as they
// are, so the two forms can be compared).
func randString(r *rand.Rand, n int) string {
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// randUint mixes small values (one-byte uvarints) and the extremes.
func randUint(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return uint64(r.IntN(128))
	case 1:
		return math.MaxUint64 - uint64(r.IntN(2))
	default:
		return r.Uint64()
	}
}

func randInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return int64(r.IntN(256)) - 128
	case 1:
		return []int64{math.MinInt64, math.MaxInt64}[r.IntN(2)]
	default:
		return int64(r.Uint64())
	}
}

func randLease(r *rand.Rand) registry.LeaseRecord {
	return registry.LeaseRecord{
		Lease: randString(r, 40), GrantID: randString(r, 30), Resource: randString(r, 60), Owner: randString(r, 60),
		RequestID: randString(r, 40), OpClass: randString(r, 8), Lineage: randString(r, 32),
		Fence: randUint(r), IssuerEpoch: randUint(r), PolicyGeneration: randUint(r), Revision: randUint(r), TTLMs: randUint(r),
		IssuedAt: randInt(r), ExpiresAt: randInt(r), State: randString(r, 8), EndedAt: randInt(r),
		Token: randString(r, 700), Digest: randString(r, 71),
	}
}

func randResource(r *rand.Rand) registry.ResourceRecord {
	return registry.ResourceRecord{Resource: randString(r, 60), LastFence: randUint(r), FenceFloor: randUint(r), Holder: randString(r, 40), FreedAt: randInt(r)}
}

func randMeta(r *rand.Rand) registry.Meta {
	return registry.Meta{IssuerEpoch: randUint(r), Revision: randUint(r), FenceFloor: randUint(r), PolicySeq: randUint(r), Lineage: randString(r, 32), Time: randInt(r)}
}

// TestCodecMatchesJSON is the differential test of the binary form
// against the JSON one it replaces: for random records (every field set,
// empty strings, zero and extreme integers), the binary encoding and the
// record's JSON (what files of schema 1 hold) both decode to the record.
func TestCodecMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 5))
	for i := range 2000 {
		l, res, m := randLease(r), randResource(r), randMeta(r)
		if i == 0 {
			l, res, m = registry.LeaseRecord{}, registry.ResourceRecord{}, registry.Meta{}
		}
		checkBoth(t, l, encodeLease, decodeLease)
		checkBoth(t, res, encodeResource, decodeResource)
		checkBoth(t, m, encodeMeta, decodeMeta)
	}
}

func checkBoth[V any](t *testing.T, v V, encode func(V) []byte, decode func([]byte) (V, error)) {
	t.Helper()
	bin := encode(v)
	if bin[0] != recordV1 {
		t.Fatalf("%T: version byte %d", v, bin[0])
	}
	got, err := decode(bin)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("%T binary round trip: %+v, %v; want %+v", v, got, err, v)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err = decode(js)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("%T from JSON %s: %+v, %v; want %+v", v, js, got, err, v)
	}
}

// TestCodecRejects: a truncated record, trailing bytes, an unknown
// version byte, a string longer than the record and empty bytes all fail
// with ErrCodec, never a partial record.
func TestCodecRejects(t *testing.T) {
	l := randLease(rand.New(rand.NewPCG(1, 2)))
	l.Token = "tok"
	bin := encodeLease(l)
	bad := map[string][]byte{
		"empty":    {},
		"version":  append([]byte{2}, bin[1:]...),
		"trailing": append(append([]byte(nil), bin...), 0),
		"long str": {recordV1, 0x7f, 'a'},
		"bad JSON": []byte(`{"lease":`),
		"overflow": append([]byte{recordV1}, []byte(strings.Repeat("\xff", 11))...),
	}
	for i := 1; i < len(bin); i++ {
		bad["truncated"+string(rune('A'+i%26))+string(rune('a'+i/26))] = bin[:i]
	}
	for name, raw := range bad {
		if got, err := decodeLease(raw); !errors.Is(err, ErrCodec) {
			t.Errorf("%s: decoded %+v, err %v; want ErrCodec", name, got, err)
		}
	}
}

// FuzzDecodeRecords: no input panics a decoder, and what decodes
// re-encodes to a record that decodes to the same value.
func FuzzDecodeRecords(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		f.Add(encodeLease(randLease(r)))
		f.Add(encodeResource(randResource(r)))
		f.Add(encodeMeta(randMeta(r)))
	}
	js, _ := json.Marshal(randLease(r))
	f.Add(js)
	f.Add([]byte(`{"issuerEpoch":3,"revision":9,"lineage":"ab"}`))
	f.Add([]byte{recordV1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if l, err := decodeLease(raw); err == nil {
			if again, err := decodeLease(encodeLease(l)); err != nil || !reflect.DeepEqual(again, l) {
				t.Fatalf("lease %+v re-decoded as %+v, %v", l, again, err)
			}
		}
		if res, err := decodeResource(raw); err == nil {
			if again, err := decodeResource(encodeResource(res)); err != nil || again != res {
				t.Fatalf("resource %+v re-decoded as %+v, %v", res, again, err)
			}
		}
		if m, err := decodeMeta(raw); err == nil {
			if again, err := decodeMeta(encodeMeta(m)); err != nil || again != m {
				t.Fatalf("meta %+v re-decoded as %+v, %v", m, again, err)
			}
		}
	})
}
