package main

import (
	"os/exec"
	"strings"
	"testing"
)

// kubePrefixes are the Kubernetes client libraries the injector
// (cmd/fencegate-injector) links; the fencegate binary, which every
// sidecar runs, links none of them.
var kubePrefixes = []string{
	"sigs.k8s.io/controller-runtime",
	"k8s.io/client-go",
	"k8s.io/api/",
	"k8s.io/apimachinery",
	"github.com/fencegate/fencegate/inject",
}

// TestBinaryLinksNoKubernetesClient: `go list -deps` of the fencegate
// binary names no Kubernetes client package and not the injector's.
func TestBinaryLinksNoKubernetesClient(t *testing.T) {
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
		for _, p := range kubePrefixes {
			if strings.HasPrefix(d, p) {
				t.Errorf("the fencegate binary links %s (the injector's dependency; keep it in cmd/fencegate-injector)", d)
			}
		}
	}
}
