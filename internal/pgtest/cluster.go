package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/clock"
)

// Cluster is a private PostgreSQL cluster a fault test starts, kills and
// restarts: initdb in a temporary directory, the postmaster on a free
// loopback port (and its socket in that directory), fsync on, trust
// authentication for the user postgres. As root it runs as the user
// postgres (PostgreSQL refuses root).
type Cluster struct {
	tb   testing.TB
	dir  string // the temporary directory: data/, the socket, the log
	bin  string // the directory of initdb, pg_ctl, postgres
	port int
	cred *syscall.Credential
}

// StartCluster initdbs and starts a cluster, stopped and removed when tb
// ends. A machine without initdb fails the test, saying so.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin, err := binDir()
	if err != nil {
		tb.Fatalf("pgtest: %v (install postgresql: bash .ci/run does)", err)
	}
	dir, err := os.MkdirTemp("", "fgpg")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{tb: tb, dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		c.cred, err = postgresUser()
		if err != nil {
			tb.Fatalf("pgtest: running as root, and %v", err)
		}
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() {
		_ = c.pgctl("stop", "-m", "immediate")
		c.killAll()
		_ = os.RemoveAll(dir)
	})
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		tb.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	c.port = freePort(tb)
	c.Restart()
	return c
}

// binDir finds the directory of initdb: on PATH, or Debian's
// /usr/lib/postgresql/<version>/bin (the newest).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) == 0 {
		return "", errors.New("no initdb on PATH or in /usr/lib/postgresql/*/bin")
	}
	return filepath.Dir(m[len(m)-1]), nil
}

// postgresUser is the credential of the user postgres.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("no user postgres to run the cluster as: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// command runs one of the cluster's programs as the cluster's user.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *Cluster) pgctl(args ...string) error {
	args = append([]string{"-D", c.data(), "-w", "-t", "60"}, args...)
	out, err := c.command("pg_ctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// DSN is the cluster's DSN for database db.
func (c *Cluster) DSN(db string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(c.port) + "/" + db + "?sslmode=disable"
}

// Restart starts the postmaster (again, after Kill) on the same port and
// data, and waits until it accepts connections: crash recovery replays
// the WAL first.
func (c *Cluster) Restart() {
	c.tb.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on", c.port, c.dir)
	var err error
	for range 20 {
		if err = c.pgctl("start", "-l", filepath.Join(c.dir, "log"), "-o", opts); err == nil {
			break
		}
		// Backends of a killed postmaster may still hold its shared
		// memory for a moment.
		c.killAll()
		clock.Sleep(clock.Real(), 250*time.Millisecond, nil)
	}
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		c.tb.Fatalf("pgtest: %v\nlog:\n%s", err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		// Over the socket: loopback TCP may require TLS (EnableTLS).
		conn, err := pgx.Connect(ctx, "host="+c.dir+" port="+strconv.Itoa(c.port)+" user=postgres dbname=postgres")
		if err == nil {
			_ = conn.Close(ctx)
			return
		}
		if ctx.Err() != nil {
			c.tb.Fatalf("pgtest: the restarted cluster does not answer: %v", err)
		}
		clock.Sleep(clock.Real(), 50*time.Millisecond, nil)
	}
}

// EnableTLS restarts the cluster serving TLS on loopback with the server
// certificate and key given, and requiring it: a TCP connection without
// TLS is rejected, and one with TLS must present a client certificate that
// caPEM verifies (clientcert=verify-ca). The socket stays open, trusted.
func (c *Cluster) EnableTLS(certPEM, keyPEM, caPEM []byte) {
	c.tb.Helper()
	if err := c.pgctl("stop", "-m", "fast"); err != nil {
		c.tb.Fatal(err)
	}
	files := map[string][]byte{"server.crt": certPEM, "server.key": keyPEM, "root.crt": caPEM,
		"pg_hba.conf": []byte("local all all trust\n" +
			"hostssl all all 127.0.0.1/32 trust clientcert=verify-ca\n" +
			"hostnossl all all 127.0.0.1/32 reject\n")}
	for name, b := range files {
		p := filepath.Join(c.dir, name)
		if name == "pg_hba.conf" {
			p = filepath.Join(c.data(), name)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			c.tb.Fatal(err)
		}
		if c.cred != nil {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				c.tb.Fatal(err)
			}
		}
	}
	conf, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.tb.Fatal(err)
	}
	_, err = fmt.Fprintf(conf, "\nssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\nssl_ca_file = '%s'\n",
		filepath.Join(c.dir, "server.crt"), filepath.Join(c.dir, "server.key"), filepath.Join(c.dir, "root.crt"))
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.tb.Fatal(err)
	}
	c.Restart()
}

// PostmasterPID reads the running postmaster's PID from postmaster.pid
// (0 when there is none).
func (c *Cluster) PostmasterPID() int {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// Kill sends SIGKILL to the postmaster, as a crash of the machine's
// database would end it, then to the backends it leaves (which would
// exit on their own once they notice), and waits until they are gone.
func (c *Cluster) Kill() {
	c.tb.Helper()
	pid := c.PostmasterPID()
	if pid == 0 {
		c.tb.Fatal("pgtest: no postmaster to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.tb.Fatalf("pgtest: kill -9 %d: %v", pid, err)
	}
	c.killAll()
}

// killAll kills every process whose command line names the cluster's
// data directory or whose parent is its postmaster, and waits for them.
func (c *Cluster) killAll() {
	deadline := clock.Real().Now().Add(10 * time.Second)
	for clock.Real().Now().Before(deadline) {
		pids := c.processes()
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		clock.Sleep(clock.Real(), 20*time.Millisecond, nil)
	}
}

// processes lists the live processes of the cluster: those whose
// environment or command line names its directory (the postmaster, and
// its children, which inherit both).
func (c *Cluster) processes() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || zombie(stat) {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == c.data() || cwd == c.dir) {
			out = append(out, pid)
		}
	}
	return out
}

// zombie reports a process that has exited (state Z or X in its stat).
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
