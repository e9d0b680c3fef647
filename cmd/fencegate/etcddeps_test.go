package main

import (
	"os/exec"
	"strings"
	"testing"
)

// etcdServerPrefixes are etcd's server side (the members package
// internal/etcdtest runs in tests): the registry's etcd backend needs only
// the client.
var etcdServerPrefixes = []string{
	"go.etcd.io/etcd/server/",
	"go.etcd.io/raft/",
	"go.etcd.io/etcd/pkg/",
}

// TestBinaryLinksNoEtcdServer: `go list -deps` of the fencegate binary
// names etcd's client (registry/etcd) and none of etcd's server packages.
func TestBinaryLinksNoEtcdServer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/fencegate/fencegate/cmd/fencegate").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	client := false
	for _, d := range deps {
		client = client || d == "go.etcd.io/etcd/client/v3"
		for _, p := range etcdServerPrefixes {
			if strings.HasPrefix(d, p) {
				t.Errorf("the fencegate binary links %s (etcd's server side; only internal/etcdtest's test binary may)", d)
			}
		}
	}
	if !client {
		t.Error("the fencegate binary does not link go.etcd.io/etcd/client/v3: is registry/etcd wired into the registry server?")
	}
}
