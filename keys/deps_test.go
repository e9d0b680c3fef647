package keys_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyRootAndJWX: of this module, keys compiles in the root
// package only (`go list -deps` of its non-test build), and of other
// modules only jwx and what jwx itself needs; never the registry, verify
// or the sidecar.
func TestImportsOnlyRootAndJWX(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	list := func(pkg string) []string {
		out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	jwx := map[string]bool{}
	for _, p := range []string{"github.com/lestrrat-go/jwx/v2/jwa", "github.com/lestrrat-go/jwx/v2/jwk", "github.com/lestrrat-go/jwx/v2/jws"} {
		for _, d := range list(p) {
			jwx[d] = true
		}
	}
	deps := list("github.com/fencegate/fencegate/keys")
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		switch {
		case d == "github.com/fencegate/fencegate", d == "github.com/fencegate/fencegate/keys", jwx[d]:
		default:
			t.Errorf("keys depends on %s (only the root package and jwx are allowed)", d)
		}
	}
}
