package fencegate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

func TestValidateResource(t *testing.T) {
	for _, ok := range []string{"a", "invoice-batch/2026-07-19", "tenant:7/user@x/~me/v1.2_3", strings.Repeat("r", fencegate.MaxResourceLen)} {
		if err := fencegate.ValidateResource(ok); err != nil {
			t.Errorf("ValidateResource(%q): %v", ok, err)
		}
	}
	// The store used to accept every one of these but the first two and
	// the last (any UTF-8 without control characters); the registry never
	// did. The one rule is the registry's.
	for _, bad := range []string{"", strings.Repeat("r", fencegate.MaxResourceLen+1), "a b", "a%2Fb", "é", "a?b", "a#b",
		"/a", "a/", "a//b", "./a", "a/../b", "..", "a\x00b"} {
		if err := fencegate.ValidateResource(bad); !errors.Is(err, fencegate.ErrInvalidResource) {
			t.Errorf("ValidateResource(%q): %v, want ErrInvalidResource", bad, err)
		}
	}
}
