package charts_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helmModule is the Helm release the tests build from the Go module proxy.
// `go install pkg@version` does not touch fencegate's go.mod.
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

// tools are the binaries the tests run, built once per test binary.
type tools struct {
	dir       string // temporary directory holding both, and Helm's homes
	helm      string
	validate  string
	skip      string // why the tests skip: the module proxy is unreachable
	err       error  // any other build failure: the tests fail
	buildNote string // how long the builds took, for the log
}

var (
	toolsOnce sync.Once
	built     tools
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	// No goroutine may outlive the tests.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// offlineMarkers are what the go command prints when it cannot reach the
// module proxy (and has no copy in the module cache). Only these make the
// tests skip; any other build failure fails them.
var offlineMarkers = []string{
	"dial tcp",
	"no such host",
	"i/o timeout",
	"connection refused",
	"network is unreachable",
	"TLS handshake timeout",
	"proxyconnect",
	"module lookup disabled by GOPROXY=off",
	"disabled by GOPROXY=off",
	"temporary failure in name resolution",
}

func offline(out string) bool {
	low := strings.ToLower(out)
	for _, m := range offlineMarkers {
		if strings.Contains(low, strings.ToLower(m)) {
			return true
		}
	}
	return false
}

// goCmd runs the go command with a clean module environment: no
// workspace, no -mod flag inherited from the caller.
func goCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	return cmd
}

// needTools builds Helm and the validator (once per test binary, in
// parallel) and returns them; it skips the test only when the module proxy
// is unreachable.
func needTools(t *testing.T) tools {
	t.Helper()
	toolsOnce.Do(buildTools)
	if built.skip != "" {
		t.Skip(built.skip)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built
}

func buildTools() {
	dir, err := os.MkdirTemp("", "fencegate-charts-")
	if err != nil {
		built.err = err
		return
	}
	built.dir = dir
	built.helm = filepath.Join(dir, "bin", "helm")
	built.validate = filepath.Join(dir, "bin", "validate")
	ctx := context.Background()

	type result struct {
		what string
		out  []byte
		err  error
		dur  string
	}
	results := make(chan result, 2)
	run := func(what string, cmd *exec.Cmd) {
		start := time.Now()
		out, err := cmd.CombinedOutput()
		results <- result{what, out, err, time.Since(start).Round(time.Second).String()}
	}
	helm := goCmd(ctx, dir, "install", helmModule)
	helm.Env = append(helm.Env, "GOBIN="+filepath.Join(dir, "bin"))
	go run("building "+helmModule, helm)
	validator, err := filepath.Abs("validate")
	if err != nil {
		built.err = err
		return
	}
	go run("building charts/validate", goCmd(ctx, validator, "build", "-mod=readonly", "-o", built.validate, "."))

	var notes []string
	for range 2 {
		r := <-results
		notes = append(notes, fmt.Sprintf("%s: %s", r.what, r.dur))
		if r.err == nil {
			continue
		}
		msg := fmt.Sprintf("%s: %v\n%s", r.what, r.err, r.out)
		if offline(string(r.out)) {
			built.skip = "SKIPPED: the Go module proxy is unreachable, so Helm and the validator cannot be built: " + msg
		} else if built.err == nil {
			built.err = fmt.Errorf("%s", msg)
		}
	}
	built.buildNote = strings.Join(notes, "; ")
	if built.err != nil {
		built.skip = "" // a real build failure is never hidden by a skip
	}
}

// runHelm runs Helm with its homes in the tools directory, so the tests
// read no user configuration and write nothing outside it.
func runHelm(t *testing.T, tl tools, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(tl.helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(tl.dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tl.dir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(tl.dir, "helm", "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// validateManifests runs the offline validator on a rendered stream.
func validateManifests(t *testing.T, tl tools, name, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tl.validate, path).CombinedOutput()
	if err != nil {
		t.Fatalf("the rendered manifests of %s do not validate: %v\n%s", name, err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
