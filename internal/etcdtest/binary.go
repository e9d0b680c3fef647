package etcdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// build compiles the server into a shared directory under os.TempDir: to
// a temporary file, renamed into place, so a concurrent build by another
// package's test binary never exposes a half-written file.
func build() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("fencegate-etcdtest-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	tmp, err := os.CreateTemp(dir, "etcdserver-*.tmp")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	name := tmp.Name()
	_ = tmp.Close()
	out, err := exec.Command("go", "build", "-o", name, serverPackage).CombinedOutput()
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("%w: %w\n%s", ErrBuild, err, out)
	}
	// Named for its source: test binaries of other checkouts, building
	// another etcdserver at the same moment, never replace this one.
	bin := filepath.Join(dir, "etcdserver-"+sourceHash())
	if err := os.Rename(name, bin); err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	return bin, nil
}

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
