package fencegate_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// TestParseSegmentBoundedByMaxSeq: the SDK's and the sidecar's parser is
// bounded by the store's limit. Before, the SDK's ParseSegment accepted up
// to 2^64-1, so a hand-off or a header with segment 2^32 passed the SDK
// and was refused only by the sidecar.
func TestParseSegmentBoundedByMaxSeq(t *testing.T) {
	for v, want := range map[string]uint64{"1": 1, "007": 7, strconv.FormatUint(fencegate.MaxSeq, 10): fencegate.MaxSeq} {
		if n, err := fencegate.ParseSegment(v); err != nil || n != want {
			t.Errorf("ParseSegment(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"", "0", "000", "-1", "+1", " 1", "1 ", "1,2", "0x10", "٣", "4294967296", "18446744073709551615", "18446744073709551616", strings.Repeat("1", 21)} {
		if n, err := fencegate.ParseSegment(v); err == nil || n != 0 || !errors.Is(err, fencegate.ErrInvalidSegment) {
			t.Errorf("ParseSegment(%q) = %d, %v; want ErrInvalidSegment", v, n, err)
		}
	}
}

func TestOperationIDRoundTrip(t *testing.T) {
	root := fencegate.Digest([]byte("r"))
	id := fencegate.OperationID(root, 42)
	if id != root+"/42" {
		t.Fatalf("OperationID = %q", id)
	}
	r, seq, err := fencegate.ParseOperationID(id)
	if err != nil || r != root || seq != 42 {
		t.Fatalf("ParseOperationID(%q) = %q, %d, %v", id, r, seq, err)
	}
	// The root may hold slashes: the seq is after the last one.
	if r, seq, err := fencegate.ParseOperationID("a/b/3"); err != nil || r != "a/b" || seq != 3 {
		t.Fatalf("a/b/3: %q %d %v", r, seq, err)
	}
}

func TestParseOperationIDRefuses(t *testing.T) {
	for _, id := range []string{"", "/1", "root", "root/", "root/0", "root/01", "root/+1", "root/4294967296",
		"ro\x00ot/1", "ro\x7fot/1", "\xff/1", strings.Repeat("r", fencegate.MaxRootLen+1) + "/1",
		strings.Repeat("r", fencegate.MaxOperationIDLen) + "/1"} {
		if _, _, err := fencegate.ParseOperationID(id); !errors.Is(err, fencegate.ErrInvalidOperationID) {
			t.Errorf("ParseOperationID(%q): %v, want ErrInvalidOperationID", id, err)
		}
	}
	if _, _, err := fencegate.ParseOperationID(strings.Repeat("r", fencegate.MaxRootLen) + "/4294967295"); err != nil {
		t.Errorf("longest valid ID refused: %v", err)
	}
}
