package inbound

import (
	"net/http"
	"testing"

	"github.com/fencegate/fencegate"
)

// FuzzParseSegmentRange: no Fence-Segment value the parser accepts is one
// the fenced store refuses (0 or above fencegate.MaxSeq).
func FuzzParseSegmentRange(f *testing.F) {
	for _, s := range []string{"1", "4294967295", "4294967296", "04294967295", "18446744073709551615", "99999999999999999999", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, msg := ParseSegment(http.Header{fencegate.HeaderSegment: {v}})
		if msg == "" && (n == 0 || n > fencegate.MaxSeq) {
			t.Fatalf("accepted %q as %d, outside 1..%d", v, n, uint64(fencegate.MaxSeq))
		}
	})
}
