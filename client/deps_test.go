package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps are server dependencies a worker that imports the SDK must
// not compile: the registry's and the sidecar's packages, their router,
// logger, metrics (and protobuf under them) and bolt.
var forbiddenDeps = []string{
	"github.com/fencegate/fencegate/registry",
	"github.com/fencegate/fencegate/proxy",
	"github.com/fencegate/fencegate/store",
	"github.com/fencegate/fencegate/internal",
	"github.com/go-chi/",
	"go.uber.org/zap",
	"github.com/prometheus/",
	"google.golang.org/protobuf",
	"go.etcd.io/bbolt",
}

// ownAllowed are the only packages of this module the SDK may compile in:
// the root package (the contract), verify, clock and tlsfiles (standard
// library only) and the SDK itself.
var ownAllowed = map[string]bool{
	"github.com/fencegate/fencegate":          true,
	"github.com/fencegate/fencegate/verify":   true,
	"github.com/fencegate/fencegate/clock":    true,
	"github.com/fencegate/fencegate/tlsfiles": true,
	"github.com/fencegate/fencegate/client":   true,
}

// TestSDKImportsNoServerCode: `go list -deps` of the SDK (its non-test
// build) names none of the forbidden packages. Only the root package,
// verify, clock, jwx and the standard library may be compiled into a
// worker.
func TestSDKImportsNoServerCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/fencegate/fencegate/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/fencegate/fencegate") && !ownAllowed[d] {
			t.Errorf("the SDK depends on %s (of this module, only %v are allowed)", d, ownAllowed)
		}
		for _, f := range forbiddenDeps {
			if strings.HasPrefix(d, f) {
				t.Errorf("the SDK depends on %s (forbidden: %s)", d, f)
			}
		}
	}
}
