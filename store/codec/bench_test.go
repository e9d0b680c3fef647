package codec_test

import (
	"encoding/json"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// The binary codec against encoding/json (what store/bolt wrote before),
// on a record as a Begin leaves it and a receipt as a Commit writes it.
func BenchmarkRecord(b *testing.B) {
	rec := hotRecord()
	bin := codec.EncodeRecord(nil, rec)
	j, _ := json.Marshal(rec)
	b.Run("encode/binary", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			_ = codec.EncodeRecord(make([]byte, 0, 512), rec)
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(j)))
		for b.Loop() {
			_, _ = json.Marshal(rec)
		}
	})
	b.Run("decode/binary", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			if _, err := codec.DecodeRecord(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(j)))
		for b.Loop() {
			var r store.Record
			if err := json.Unmarshal(j, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReceipt(b *testing.B) {
	rc := hotReceipt()
	bin := codec.EncodeReceipt(nil, rc)
	j, _ := json.Marshal(rc)
	b.Run("encode/binary", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			_ = codec.EncodeReceipt(make([]byte, 0, 512), rc)
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(j)))
		for b.Loop() {
			_, _ = json.Marshal(rc)
		}
	})
	b.Run("decode/binary", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			if _, err := codec.DecodeReceipt(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(j)))
		for b.Loop() {
			var r store.Receipt
			if err := json.Unmarshal(j, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stamp/binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codec.DecodeStamp(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
}
