package registry_test

import (
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// FuzzParseLeaseCursor: any input parses or is refused without a panic;
// what parses is canonical (String gives the input back) and names a
// valid resource and a fence of at least 1.
func FuzzParseLeaseCursor(f *testing.F) {
	for _, s := range []string{"", "YQ.1", "aW52b2ljZS8yMDI2.42", "YQ.01", "..", "YQ.18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := registry.ParseLeaseCursor(s)
		if err != nil {
			return
		}
		if c.String() != s {
			t.Fatalf("ParseLeaseCursor(%q) = %+v, which writes %q", s, c, c.String())
		}
		if s != "" && (c.Fence == 0 || registry.ValidateResource(c.Resource) != nil) {
			t.Fatalf("ParseLeaseCursor(%q) accepted %+v", s, c)
		}
	})
}
