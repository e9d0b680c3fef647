package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the fencegate binary built by TestMain; simBinary is the
// simulation's (cmd/fencesim), a development gate kept out of fencegate.
var binary, simBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fencegate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "fencegate")
	simBinary = filepath.Join(dir, "fencesim")
	// As the image builds it (Dockerfile): static, paths trimmed. The other
	// builds of the suite (the Dockerfile's, the chart guide's, etcdtest's
	// tools) use the same flags, so that they share the build cache.
	build := exec.Command("go", "build", "-trimpath", "-o", dir, "../cmd/fencegate", "../cmd/fencesim")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building fencegate and fencesim:", err)
		os.Exit(1)
	}
	flag.Parse() // for startSimGate: -short, -run and -skip
	gateRun = startSimGate()
	code := m.Run()
	gateRun.stop()
	os.RemoveAll(dir)
	// No goroutine may outlive the tests.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// proc is a running fencegate process.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	err    error
	stdin  io.WriteCloser // nil unless started with stdin
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// start runs the binary with args. The process is killed at test cleanup,
// and its output is logged when the test fails.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProgram(t, name, binary, false, args...)
}

// startProgram runs the program bin with args, like start; with stdin, the
// process reads from p.stdin (closed at cleanup).
func startProgram(t *testing.T, name, bin string, stdin bool, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	if stdin {
		w, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		p.stdin = w
	}
	// An orphaned grandchild may hold the output pipes: never wait on it.
	p.cmd.WaitDelay = 2 * time.Second
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s stdout:\n%s\n--- %s stderr:\n%s", name, p.Stdout(), name, p.Stderr())
		}
	})
	return p
}

// Stdout and Stderr return what the process printed so far; Output is
// both (the servers' start line is a log line on stderr).
func (p *proc) Stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *proc) Output() string { return p.Stdout() + "\n" + p.Stderr() }
func (p *proc) Stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits up to 10s, then kills.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(10 * time.Second):
		p.kill()
		return fmt.Errorf("%s did not stop on SIGTERM", p.name)
	}
}

// waitFor waits until the process prints a line matching re (stdout or stderr) and
// returns the first submatch.
func (p *proc) waitFor(re *regexp.Regexp, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.Output()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited (%v) before printing %s\nstderr:\n%s", p.name, p.err, re, p.Stderr())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("%s did not print %s within %s", p.name, re, timeout)
	return ""
}

var listeningRE = regexp.MustCompile(`listening on (\S+)`)

// registry is a running fencegate registry.
type registry struct {
	*proc
	dataDir string
	url     string
}

// startRegistry runs "fencegate registry" in insecure-dev mode on a free
// port over dataDir (a new temp dir when empty).
func startRegistry(t *testing.T, dataDir string, extra ...string) *registry {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	args := append([]string{"registry", "--data", dataDir, "--listen", "127.0.0.1:0", "--insecure-dev", "--log-level", "warn"}, extra...)
	p := start(t, "registry", args...)
	addr := p.waitFor(listeningRE, 15*time.Second)
	return &registry{proc: p, dataDir: dataDir, url: "http://" + addr}
}

// result is a finished CLI run.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary to completion (30s at most).
func run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// fields parses "key: value" lines of the CLI's text output.
func fields(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// freePort returns a loopback address nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sidecar is a running "fencegate proxy".
type sidecar struct {
	*proc
	url, admin string
}

// sidecarListeningRE matches the sidecar's start line with both bound
// addresses.
var sidecarListeningRE = regexp.MustCompile(`listening on (\S+) \(admin (\S+)\)`)

// startSidecar writes cfg (YAML, with LISTEN and ADMIN placeholders) and
// runs "fencegate proxy --config" on it. Both listeners bind port 0 and the
// addresses are read from the sidecar's start line: a port picked free and
// closed beforehand can be taken by another process in between.
func startSidecar(t *testing.T, cfg string, extra ...string) *sidecar {
	t.Helper()
	cfg = strings.NewReplacer("LISTEN", "127.0.0.1:0", "ADMIN", "127.0.0.1:0").Replace(cfg)
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "proxy", append([]string{"proxy", "--config", path}, extra...)...)
	p.waitFor(listeningRE, 15*time.Second)
	m := sidecarListeningRE.FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("proxy start line lacks its addresses: %q", p.Output())
	}
	return &sidecar{proc: p, url: "http://" + m[1], admin: "http://" + m[2]}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

var reStarted = regexp.MustCompile(`started`)
