package pgfence_test

import (
	"os/exec"
	"strings"
	"testing"
)

// ownAllowed are the only packages of this module library mode compiles
// into a service: the contract, its authentication (authn, verify,
// identity, clock), the store's rules and its PostgreSQL backend (store,
// store/codec with its binary encoding internal/wire, store/postgres), the
// sidecar's request-contract parsers (proxy/inbound, proxy/outbound:
// the contract only) and pgfence. Never the sidecar, the registry or the
// binary's internals.
var ownAllowed = map[string]bool{
	"github.com/fencegate/fencegate":                true,
	"github.com/fencegate/fencegate/authn":          true,
	"github.com/fencegate/fencegate/verify":         true,
	"github.com/fencegate/fencegate/identity":       true,
	"github.com/fencegate/fencegate/clock":          true,
	"github.com/fencegate/fencegate/store":          true,
	"github.com/fencegate/fencegate/store/codec":    true,
	"github.com/fencegate/fencegate/internal/wire":  true,
	"github.com/fencegate/fencegate/store/postgres": true,
	"github.com/fencegate/fencegate/proxy/inbound":  true,
	"github.com/fencegate/fencegate/proxy/outbound": true,
	"github.com/fencegate/fencegate/pgfence":        true,
}

// TestLibraryModeImportsNoServer: `go list -deps` of pgfence names no
// package of this module outside ownAllowed.
func TestLibraryModeImportsNoServer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/fencegate/fencegate/pgfence").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	n := 0
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/fencegate/fencegate") {
			n++
			if !ownAllowed[d] {
				t.Errorf("pgfence depends on %s, which a library-mode service must not compile in", d)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list -deps listed %d packages of this module: the test lost its way of finding them", n)
	}
}
