package etcdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
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

// build compiles the server (buildTool), named for its source: test
// binaries of other checkouts, building another etcdserver at the same
// moment, never replace this one.
func build() (string, error) { return buildTool(serverPackage, "etcdserver-"+sourceHash()) }

// sourceHash digests etcdserver's main.go and the module's go.mod (the
// embed version), found next to this file; "" when they cannot be read.
func sourceHash() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	h := sha256.New()
	for _, p := range []string{filepath.Join(filepath.Dir(file), "etcdserver", "main.go"), filepath.Join(filepath.Dir(file), "..", "..", "go.mod")} {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
