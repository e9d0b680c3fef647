package verify_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoServerCode: verify and its subpackages (their non-test
// builds, `go list -deps ./verify/...`) compile in, of this module, only
// the root package, keys and themselves: never the registry, the sidecar
// or the store, which verify is beneath.
func TestImportsNoServerCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/fencegate/fencegate/verify/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	const mod = "github.com/fencegate/fencegate"
	for _, d := range deps {
		switch {
		case !strings.HasPrefix(d, mod+"/") && d != mod:
		case d == mod, d == mod+"/keys", d == mod+"/verify", strings.HasPrefix(d, mod+"/verify/"):
		default:
			t.Errorf("verify depends on %s (of this module only the root package, keys and verify itself are allowed)", d)
		}
	}
}
