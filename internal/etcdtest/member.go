package etcdtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// readyLine is what etcdserver prints once it serves clients.
const readyLine = "etcdserver: ready"

// readyTimeout bounds how long a member may take to serve clients.
const readyTimeout = 30 * time.Second

// errAddrInUse marks a member that exited because its port was taken.
var errAddrInUse = errors.New("etcdtest: address in use")

func errPortTaken(err error) bool { return errors.Is(err, errAddrInUse) }

// Member is one etcd process of a Cluster: its name, ports and data
// directory stay the same across Kill, Stop and Start.
type Member struct {
	tb             testing.TB
	bin            string
	name           string
	dir            string
	clientPort     int
	peerPort       int
	initialCluster string
	args           []string
	// advertisePeer, when set, is the peer URL the member advertises (a
	// partition gate's, partition.go) instead of the one it listens on.
	advertisePeer string
	// started is set once the member first served: a later start joins
	// the cluster recorded in its data directory.
	started bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	ready  chan struct{}
}

func newMember(tb testing.TB, bin, name string, client, peer int) *Member {
	m := &Member{tb: tb, bin: bin, name: name, dir: tb.TempDir(), clientPort: client, peerPort: peer}
	// Registered after TempDir's cleanup, so it runs before it: the
	// process is dead before its directory is removed.
	tb.Cleanup(m.Kill)
	return m
}

// Name is the member's name (m0, m1, ...).
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return portURL(m.clientPort) }

func (m *Member) peerURL() string { return portURL(m.peerPort) }

// Dir is the member's data directory.
func (m *Member) Dir() string { return filepath.Join(m.dir, "data") }

func (m *Member) logFile() string { return filepath.Join(m.dir, "etcd.log") }

// PID is the running process's ID (0 when it is not running).
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Kill sends SIGKILL to the member, as a crash would, and waits for it to
// exit. Killing a member that is not running does nothing.
func (m *Member) Kill() { m.signal(syscall.SIGKILL) }

// Stop sends SIGTERM (the member closes its server cleanly) and waits for
// it to exit.
func (m *Member) Stop() { m.signal(syscall.SIGTERM) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	<-m.exited
	m.cmd = nil
}

// Start starts a stopped or killed member again on the same ports and data
// directory and waits until it serves clients (which, in a cluster, needs
// a quorum of members running). It fails the test otherwise.
func (m *Member) Start() {
	m.tb.Helper()
	m.Kill()
	if err := m.spawn(); err != nil {
		m.tb.Fatalf("etcdtest: start %s: %v", m.name, err)
	}
	if err := m.waitReady(); err != nil {
		m.Kill()
		m.tb.Fatalf("etcdtest: start %s: %v", m.name, err)
	}
}

// spawn starts the process; waitReady then waits for its ready line.
func (m *Member) spawn() error {
	state := "new"
	if m.started {
		state = "existing"
	}
	cmd := exec.Command(m.bin,
		"-name", m.name,
		"-data-dir", m.Dir(),
		"-client-url", m.Endpoint(),
		"-peer-url", m.peerURL(),
		"-initial-cluster", m.initialCluster,
		"-initial-cluster-state", state,
		"-log", m.logFile(),
	)
	if m.advertisePeer != "" {
		cmd.Args = append(cmd.Args, "-advertise-peer-url", m.advertisePeer)
	}
	cmd.Args = append(cmd.Args, m.args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	stderr, err := os.OpenFile(m.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdtest: %s: %w", m.bin, err)
	}
	exited, ready := make(chan struct{}), make(chan struct{})
	// The reader ends at EOF (the process exited); Wait after it, as
	// exec requires for a StdoutPipe.
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == readyLine {
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited, m.ready = cmd, exited, ready
	m.mu.Unlock()
	return nil
}

func (m *Member) waitReady() error {
	m.mu.Lock()
	exited, ready := m.exited, m.ready
	m.mu.Unlock()
	// A real process on real sockets: real time.
	t := clock.Real().NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		m.started = true
		return nil
	case <-exited:
		m.mu.Lock()
		m.cmd = nil
		m.mu.Unlock()
		log := tail(m.logFile())
		if strings.Contains(log, "address already in use") {
			return fmt.Errorf("%w: %s: %s", errAddrInUse, m.name, log)
		}
		return fmt.Errorf("etcdtest: %s exited: %s", m.name, log)
	case <-t.C():
		return fmt.Errorf("etcdtest: %s: not ready within %v: %s", m.name, readyTimeout, tail(m.logFile()))
	}
}

// tail returns the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const n = 2000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
