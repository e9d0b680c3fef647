package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// utilPackage is etcd's own offline tool (snapshot restore), a tool
// dependency of the module (go.mod's tool directive) at the version of
// the client and server.
const utilPackage = "go.etcd.io/etcd/etcdutl/v3"

var (
	utilOnce sync.Once
	utilBin  string
	errUtil  error
)

// UtilBinary returns the path of etcdutl: $ETCDTEST_UTIL when set, else
// built with `go build` once per test binary run.
func UtilBinary() (string, error) {
	if b := os.Getenv("ETCDTEST_UTIL"); b != "" {
		return b, nil
	}
	utilOnce.Do(func() { utilBin, errUtil = buildTool(utilPackage, "etcdutl-"+sourceHash()) })
	return utilBin, errUtil
}

// buildTool compiles pkg into a shared directory under os.TempDir, as
// name: to a temporary file, renamed into place, so a concurrent build by
// another package's test binary never exposes a half-written file.
func buildTool(pkg, name string) (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("fencegate-etcdtest-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	tmpName := tmp.Name()
	_ = tmp.Close()
	// Static and trimmed, as the other builds of the test suite (e2e's, the
	// Dockerfile's), so that they share the build cache.
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmpName, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		_ = os.Remove(tmpName)
		return "", fmt.Errorf("%w: %s: %w\n%s", ErrBuild, pkg, err, out)
	}
	bin := filepath.Join(dir, name)
	if err := os.Rename(tmpName, bin); err != nil {
		_ = os.Remove(tmpName)
		return "", fmt.Errorf("%w: %w", ErrBuild, err)
	}
	return bin, nil
}
