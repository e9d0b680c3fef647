package etcdtest

import (
	"errors"
	"os"
	"sync"
)

// serverPackage is the import path of the member's main package.
const serverPackage = "github.com/fencegate/fencegate/internal/etcdtest/etcdserver"

var (
	buildOnce sync.Once
	buildBin  string
	errBuild  error
)

// ErrBuild is returned by Binary when the server cannot be built.
var ErrBuild = errors.New("etcdtest: building the etcd server failed")

// Binary returns the path of the etcd member executable: $ETCDTEST_SERVER
// when set, else etcdserver built with `go build` once per test binary
// run (later calls return the first build's outcome).
func Binary() (string, error) {
	if b := os.Getenv("ETCDTEST_SERVER"); b != "" {
		return b, nil
	}
	buildOnce.Do(func() { buildBin, errBuild = build() })
	return buildBin, errBuild
}

// build compiles the server (buildTool).
func build() (string, error) { return buildTool(serverPackage, "etcdserver") }
