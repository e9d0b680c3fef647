package codec_test

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/store/codec"
)

// The binary bytes are the format of every file written with them: if this
// test fails, the encoding changed, which needs a new Version (and the
// decoder of the old one kept), never an edit of these bytes.
func TestEncodingIsPinned(t *testing.T) {
	rec, rc := fullRecord(), fullReceipt()
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"record", codec.EncodeRecord(nil, rec), "" +
			"0101" + "0172" + "07" + "04726f6f74" + "016c" + "0167" + "0309" + "026c32" + // resource .. evidence
			// times: varint 2×(seconds since 0001-01-01), uvarint nanoseconds (500)
			"01" + "026c31" + "06" + // prior lineages
			"80cdf59edc03" + "f403" + "01" + // accepted at, last seq
			"06" + "05726f6f7436" + "04" + // superseded
			"01" + "0172" + "07" + "04726f6f74" + "02" + "06726f6f742f32" + "0170" + "0167" + "016c" + "016f" + "0309026c32" + // marker
			"80cdf59edc03f403" + "f8cdf59edc03f403" + "f0cef59edc03f403" + "01" + "07554e4b4e4f574e" + "094e4f5f414e53574552" + "80cdf59edc03f403" +
			"01" + "1046454e43455f52454752455353494f4e" + "0164" + "80cdf59edc03f403" + "05" + "040000"}, // pause
		{"receipt", codec.EncodeReceipt(nil, rc), "" +
			"0102" + "02" + // body length
			"0172" + "07" + "04726f6f74" + "02" + "06726f6f742f32" + "80cdf59edc03f403" + // stamp
			"06726370742d78" + "0170" + "0167" + "016f" + "9203" + "06434f4d4d4954" + "9203" + "01" +
			"03" + "0141" + "02" + "0162" + "0143" + "03" + "0164" + "0165" + "014e" + "00" + // header
			"6869"}, // body
	} {
		if h := hex.EncodeToString(c.got); h != c.want {
			t.Errorf("binary %s changed (a new codec.Version, never an edit of this test):\n got %s\nwant %s", c.name, h, c.want)
		}
	}
	// And the pinned bytes decode to the values.
	back, err := codec.DecodeRecord(codec.EncodeRecord(nil, rec))
	if err != nil || !reflect.DeepEqual(back, rec) {
		t.Fatalf("record: %+v, %v", back, err)
	}
	brc, err := codec.DecodeReceipt(codec.EncodeReceipt(nil, rc))
	if err != nil || !reflect.DeepEqual(brc, rc) {
		t.Fatalf("receipt: %+v, %v", brc, err)
	}
}
