package fencegate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// FuzzParseSegment: a value is accepted only as the decimal (leading
// zeros allowed) of a number in 1..MaxSeq; never a panic.
func FuzzParseSegment(f *testing.F) {
	for _, s := range []string{"1", "0", "007", "-1", "4294967295", "4294967296", "18446744073709551616", "1,2", " 7 ", "+3", "0x10", "", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := fencegate.ParseSegment(v)
		if err != nil {
			if n != 0 {
				t.Fatalf("refused %q but returned %d", v, n)
			}
			return
		}
		if n == 0 || n > fencegate.MaxSeq {
			t.Fatalf("accepted %q as %d, outside 1..MaxSeq", v, n)
		}
		if trimmed := strings.TrimLeft(v, "0"); trimmed != strconv.FormatUint(n, 10) {
			t.Fatalf("%q parsed as %d", v, n)
		}
	})
}

// FuzzParseOperationID: an accepted ID is exactly OperationID(root, seq) of
// what it parses to, its root passes ValidateOperationRoot and its seq is in
// 1..MaxSeq; never a panic.
func FuzzParseOperationID(f *testing.F) {
	for _, s := range []string{"root/1", "a/b/3", "/1", "root/0", "root/01", "sha256:" + strings.Repeat("a", 64) + "/4294967295", "r\x00/1", "\xff/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		root, seq, err := fencegate.ParseOperationID(id)
		if err != nil {
			return
		}
		if fencegate.OperationID(root, seq) != id || seq == 0 || seq > fencegate.MaxSeq || fencegate.ValidateOperationRoot(root) != nil {
			t.Fatalf("accepted %q as %q %d", id, root, seq)
		}
	})
}

// FuzzValidateResource: an accepted resource ID is 1..MaxResourceLen bytes
// of the allowed charset with no empty, "." or ".." segment; never a panic.
func FuzzValidateResource(f *testing.F) {
	for _, s := range []string{"a", "a/b", "a//b", "../a", "é", "a b", "tenant:7/user@x/~me"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if fencegate.ValidateResource(s) != nil {
			return
		}
		if s == "" || len(s) > fencegate.MaxResourceLen {
			t.Fatalf("accepted %q", s)
		}
		for _, seg := range strings.Split(s, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", s, seg)
			}
		}
		if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@~/") != "" {
			t.Fatalf("accepted %q with a byte outside the charset", s)
		}
	})
}

// FuzzValidateDigest: ValidateDigest accepts exactly
// the Digest format; never a panic.
func FuzzValidateDigest(f *testing.F) {
	f.Add(fencegate.Digest(nil))
	f.Add("sha256:")
	f.Add("SHA256:" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, d string) {
		if fencegate.ValidateDigest(d) != nil {
			return
		}
		if len(d) != fencegate.DigestLen || !strings.HasPrefix(d, fencegate.DigestPrefix) || strings.Trim(d[len(fencegate.DigestPrefix):], "0123456789abcdef") != "" {
			t.Fatalf("accepted %q", d)
		}
	})
}
