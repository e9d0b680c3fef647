package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// Binary is the redis-server executable Start runs: $REDIS_SERVER if set,
// else redis-server from $PATH, else /usr/bin/redis-server.
func Binary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("redis-server"); err == nil {
		return b, nil
	}
	const fallback = "/usr/bin/redis-server"
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", errors.New("redistest: redis-server not found (install it, or set REDIS_SERVER)")
}

// Server is a running (or killed) private redis-server.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startAttempts bounds the retries when the chosen port is taken.
const startAttempts = 5

// readyTimeout bounds how long Start waits for the server's first PONG.
const readyTimeout = 10 * time.Second

// Start starts a redis-server for tb on a free loopback port and registers
// its kill with tb.Cleanup. args are appended to the defaults. It fails tb
// when redis-server is missing or does not answer PING.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), args: append([]string(nil), args...)}
	tb.Cleanup(s.Kill)
	var last error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s.port = port
		if last = s.start(); last == nil {
			return s
		}
	}
	tb.Fatalf("redistest: start: %v", last)
	return nil
}

// Addr is the server's host:port on 127.0.0.1; it stays the same across
// Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir is the server's working directory (where RDB and AOF files go).
func (s *Server) Dir() string { return s.dir }

// Kill stops the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a server that is not running does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart kills the server if it runs and starts it again on the same port
// and directory with the same arguments; what it persisted (with
// --appendonly yes, say) is loaded again. It fails the test if the server
// does not come back.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	logfile := filepath.Join(s.dir, "redis.log")
	argv := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "yes",
		"--appendfsync", "always",
		"--dir", s.dir,
		"--logfile", logfile,
		"--daemonize", "no",
	}
	argv = append(argv, s.args...)
	cmd := exec.Command(s.bin, argv...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	// A real process on a real socket: real time.
	clk := clock.Real()
	deadline := clk.Now().Add(readyTimeout)
	for {
		if err := Ping(s.Addr()); err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("redistest: redis-server on port %d exited: %s", s.port, tail(logfile))
		case <-clk.NewTimer(20 * time.Millisecond).C():
		}
		if clk.Now().After(deadline) {
			s.killLocked()
			return fmt.Errorf("redistest: redis-server on port %d: no PONG within %v: %s", s.port, readyTimeout, tail(logfile))
		}
	}
}

// Ping sends PING in RESP to addr and expects +PONG (or NOAUTH): the
// server is up. A server still loading its data answers LOADING and is not
// ready. (The benchmark harness starts its own servers and waits with it.)
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(clock.Real().Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// A server started with --requirepass answers NOAUTH: it is up.
	if line = strings.TrimSpace(line); line != "+PONG" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("redistest: PING answered %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("redistest: free port: %w", err)
	}
	return port, nil
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
