package codec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// seeds adds, for each value, its binary and JSON encodings and some
// damaged copies of the binary one.
func seeds(f *testing.F, bins, jsons [][]byte) {
	for _, b := range bins {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(append([]byte(nil), b...), 0))
		c := append([]byte(nil), b...)
		c[len(c)/3] ^= 0x80
		f.Add(c)
	}
	for _, j := range jsons {
		f.Add(j)
	}
	f.Add([]byte{})
	f.Add([]byte{codec.Version})
	f.Add([]byte{0x02, codec.KindRecord})
	f.Add([]byte("{"))
	f.Add([]byte(`{"resource":"r","acceptedAt":"2026-07-19T12:00:00+01:00"}`))
	f.Add([]byte{codec.Version, codec.KindReceipt, 0xff, 0xff, 0xff, 0xff, 0x0f})
}

func mustJSON(f *testing.F, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return j
}

// checkRefusal fails unless err is a codec error: ErrCorrupt, prefixed.
func checkRefusal(t *testing.T, err error) {
	if !errors.Is(err, store.ErrCorrupt) || !strings.HasPrefix(err.Error(), "store/codec: ") {
		t.Fatalf("refusal %v: want a store/codec: ... ErrCorrupt", err)
	}
}

// FuzzDecodeRecord: no panic on any input; a refusal is ErrCorrupt; a
// binary value accepted re-encodes to the same bytes, a JSON one to binary
// bytes that decode to the same encoding again; the decoded value shares no
// memory with the input.
func FuzzDecodeRecord(f *testing.F) {
	seeds(f, [][]byte{codec.EncodeRecord(nil, fullRecord()), codec.EncodeRecord(nil, hotRecord()), codec.EncodeRecord(nil, store.Record{})},
		[][]byte{mustJSON(f, fullRecord()), mustJSON(f, hotRecord())})
	f.Fuzz(func(t *testing.T, in []byte) {
		data := append([]byte(nil), in...)
		rec, err := codec.DecodeRecord(data)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		bin := codec.EncodeRecord(nil, rec)
		if data[0] == codec.Version && !bytes.Equal(bin, data) {
			t.Fatalf("accepted %x, re-encodes to %x", data, bin)
		}
		back, err := codec.DecodeRecord(bin)
		if err != nil {
			t.Fatalf("re-encoding %x refused: %v", bin, err)
		}
		if again := codec.EncodeRecord(nil, back); !bytes.Equal(again, bin) {
			t.Fatalf("unstable: %x then %x", bin, again)
		}
		if data[0] == codec.Version && !reflect.DeepEqual(back, rec) {
			t.Fatalf("decodes %#v, then %#v", rec, back)
		}
		for i := range data {
			data[i] = 0xff
		}
		if after := codec.EncodeRecord(nil, rec); !bytes.Equal(after, bin) {
			t.Fatalf("the decoded record shares the input's memory")
		}
	})
}

// FuzzDecodeReceipt: as FuzzDecodeRecord, and DecodeStamp accepts exactly
// what DecodeReceipt accepts, with the receipt's stamp.
func FuzzDecodeReceipt(f *testing.F) {
	seeds(f, [][]byte{codec.EncodeReceipt(nil, fullReceipt()), codec.EncodeReceipt(nil, hotReceipt()), codec.EncodeReceipt(nil, store.Receipt{})},
		[][]byte{mustJSON(f, fullReceipt()), mustJSON(f, hotReceipt())})
	f.Fuzz(func(t *testing.T, in []byte) {
		data := append([]byte(nil), in...)
		rc, err := codec.DecodeReceipt(data)
		st, serr := codec.DecodeStamp(data)
		if (err == nil) != (serr == nil) {
			t.Fatalf("DecodeReceipt: %v, DecodeStamp: %v", err, serr)
		}
		if err != nil {
			checkRefusal(t, err)
			checkRefusal(t, serr)
			return
		}
		if !reflect.DeepEqual(st, rc.Stamp()) {
			t.Fatalf("stamp %#v, receipt's %#v", st, rc.Stamp())
		}
		bin := codec.EncodeReceipt(nil, rc)
		if data[0] == codec.Version && !bytes.Equal(bin, data) {
			t.Fatalf("accepted %x, re-encodes to %x", data, bin)
		}
		back, err := codec.DecodeReceipt(bin)
		if err != nil {
			t.Fatalf("re-encoding %x refused: %v", bin, err)
		}
		if again := codec.EncodeReceipt(nil, back); !bytes.Equal(again, bin) {
			t.Fatalf("unstable: %x then %x", bin, again)
		}
		if data[0] == codec.Version && !reflect.DeepEqual(back, rc) {
			t.Fatalf("decodes %#v, then %#v", rc, back)
		}
		for i := range data {
			data[i] = 0xff
		}
		if after := codec.EncodeReceipt(nil, rc); !bytes.Equal(after, bin) {
			t.Fatalf("the decoded receipt shares the input's memory")
		}
		if st.Key.Resource != rc.Resource || st.OperationID != rc.OperationID {
			t.Fatalf("the stamp shares the input's memory")
		}
	})
}

// Each way a binary value is refused, by name.
func TestStrict(t *testing.T) {
	rec := codec.EncodeRecord(nil, fullRecord())
	rc := codec.EncodeReceipt(nil, fullReceipt())
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	for _, c := range []struct {
		name    string
		in      []byte
		receipt bool
	}{
		{"empty", nil, false},
		{"version only", []byte{codec.Version}, false},
		{"unknown version", mod(rec, func(b []byte) []byte { b[0] = 2; return b }), false},
		{"receipt as record", rc, false},
		{"record as receipt", rec, true},
		{"trailing byte", append(append([]byte(nil), rec...), 0), false},
		{"trailing byte receipt", append(append([]byte(nil), rc...), 0), true},
		{"truncated", rec[:len(rec)-1], false},
		{"truncated receipt", rc[:len(rc)-1], true},
		// The resource's length 1 written in two bytes.
		{"non-minimal uvarint", append([]byte{codec.Version, codec.KindRecord, 0x81, 0x00}, rec[3:]...), false},
		// The in-flight presence byte (after superseded) set to 2.
		{"bool 2", mod(rec, func(b []byte) []byte { b[bytes.Index(b, []byte("\x05root6\x04"))+7] = 2; return b }), false},
		{"string beyond the value", []byte{codec.Version, codec.KindRecord, 0x7f, 'r'}, false},
		{"prior lineages beyond the value", []byte{codec.Version, codec.KindRecord, 0x01, 'r', 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40}, false},
		{"nanoseconds", mod(rec, func(b []byte) []byte {
			i := bytes.Index(b, []byte("\xf4\x03"))
			return append(b[:i:i], append([]byte{0x80, 0x94, 0xeb, 0xdc, 0x03}, b[i+2:]...)...)
		}), false},
		{"body beyond the value", []byte{codec.Version, codec.KindReceipt, 0x40, 0x00}, true},
		{"header names out of order", mod(rc, func(b []byte) []byte { i := bytes.Index(b, []byte("\x01C\x03")); b[i+1] = '0'; return b }), true},
		{"JSON garbage", []byte("{nope"), false},
		{"JSON garbage receipt", []byte(`{"fence":-1}`), true},
	} {
		var err error
		if c.receipt {
			_, err = codec.DecodeReceipt(c.in)
			if _, serr := codec.DecodeStamp(c.in); serr == nil {
				t.Errorf("%s: DecodeStamp accepted %x", c.name, c.in)
			}
		} else {
			_, err = codec.DecodeRecord(c.in)
		}
		if err == nil {
			t.Errorf("%s: accepted %x", c.name, c.in)
			continue
		}
		if !errors.Is(err, store.ErrCorrupt) || !strings.HasPrefix(err.Error(), "store/codec: ") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
