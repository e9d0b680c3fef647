package main

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// testOnly are this module's packages that exist for tests and the
// simulation (cmd/fencesim), besides every package whose name ends in
// "test" (clocktest, registrytest, storetest, verifytest, redistest ...).
var testOnly = map[string]bool{
	"github.com/fencegate/fencegate/sim":                 true,
	"github.com/fencegate/fencegate/internal/faultproxy": true,
}

// TestBinaryLinksNothingTestOnly: `go list -deps` of the production
// binary names no test-only package of this module (the simulation is
// cmd/fencesim's).
func TestBinaryLinksNothingTestOnly(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/fencegate/fencegate/cmd/fencegate").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if !strings.HasPrefix(d, "github.com/fencegate/fencegate") {
			continue
		}
		if testOnly[d] || strings.HasSuffix(path.Base(d), "test") {
			t.Errorf("the fencegate binary links %s, a test-only package", d)
		}
	}
}
