package fencegate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

func TestDigest(t *testing.T) {
	d := fencegate.Digest([]byte("abc"))
	if d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || len(d) != fencegate.DigestLen {
		t.Fatalf("Digest = %q", d)
	}
	if err := fencegate.ValidateDigest(d); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "sha256:", strings.ToUpper(d), "sha512:" + d[7:], d + "0", d[:len(d)-1], d[:len(d)-1] + "g", " " + d[1:]} {
		if err := fencegate.ValidateDigest(bad); !errors.Is(err, fencegate.ErrInvalidDigest) {
			t.Errorf("ValidateDigest(%q): %v", bad, err)
		}
	}
}
