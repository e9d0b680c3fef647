package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// errChild is returned when a child process does not start as expected.
var errChild = errors.New("bench: child process")

// pinning says where processes run: with taskset and two CPUs or more, the
// load generator (this process, re-executed under taskset) on the last
// CPU and every server on the others.
type pinning struct {
	Enabled    bool   `json:"enabled"`
	ServerCPUs string `json:"serverCpus,omitempty"`
	LoadCPU    int    `json:"loadCpu,omitempty"`
	Note       string `json:"note"`
}

// pinEnv marks the re-executed, pinned load generator.
const pinEnv = "FENCEGATE_BENCH_PINNED"

// planPinning decides the pinning for a machine with cpus CPUs.
func planPinning(want bool, cpus int, tasksetPath string) pinning {
	switch {
	case !want:
		return pinning{Note: "not pinned (-pin=false)"}
	case tasksetPath == "":
		return pinning{Note: "not pinned: taskset not found"}
	case cpus < 2:
		return pinning{Note: "not pinned: one CPU"}
	}
	servers := "0"
	if cpus > 2 {
		servers = "0-" + strconv.Itoa(cpus-2)
	}
	return pinning{Enabled: true, ServerCPUs: servers, LoadCPU: cpus - 1,
		Note: fmt.Sprintf("load generator pinned to CPU %d, every server (backend, proxies, registries, redis-server) to CPU %s (taskset)", cpus-1, servers)}
}

// runPinning is the pinning of this run: in the re-executed load
// generator, the plan for the machine's CPU count it was passed; else
// none, since the load generator was not re-executed under taskset
// (main does that before run) and pinning the servers alone would crowd
// them onto the CPUs the unpinned load generator also uses: pin all or
// nothing.
func runPinning(want bool) pinning {
	tasksetPath, _ := exec.LookPath("taskset")
	if n, err := strconv.Atoi(os.Getenv(cpusEnv)); err == nil && os.Getenv(pinEnv) != "" {
		// This is the re-executed load generator, already on its CPU.
		return planPinning(true, n, tasksetPath)
	}
	p := planPinning(want, runtime.NumCPU(), tasksetPath)
	if p.Enabled {
		return pinning{Note: "not pinned: the load generator was not re-executed under taskset"}
	}
	return p
}

// child is a running server process.
type child struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer // stdout
	err  bytes.Buffer // stderr
	done chan struct{}
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (c *child) stdout() string { c.mu.Lock(); defer c.mu.Unlock(); return c.out.String() }
func (c *child) stderr() string { c.mu.Lock(); defer c.mu.Unlock(); return c.err.String() }

// pid is the process ID: the server itself, since taskset execs it.
func (c *child) pid() int { return c.cmd.Process.Pid }

// children starts and stops the bench's server processes.
type children struct {
	pin  pinning
	ck   clock.Clock
	mu   sync.Mutex
	list []*child
}

// start runs bin with args (under taskset when pinned) and waits until its
// stdout matches re; it returns re's submatches.
func (cs *children) start(name string, re *regexp.Regexp, dir string, bin string, args ...string) (*child, []string, error) {
	argv := append([]string{bin}, args...)
	if cs.pin.Enabled {
		argv = append([]string{"taskset", "-c", cs.pin.ServerCPUs}, argv...)
	}
	c := &child{name: name, done: make(chan struct{})}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Dir = dir
	c.cmd.Stdout = lockedBuffer{&c.mu, &c.out}
	c.cmd.Stderr = lockedBuffer{&c.mu, &c.err}
	c.cmd.WaitDelay = 2 * time.Second
	if err := c.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", errChild, name, err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	cs.mu.Lock()
	cs.list = append(cs.list, c)
	cs.mu.Unlock()
	if re == nil {
		return c, nil, nil
	}
	deadline := cs.ck.Now().Add(30 * time.Second)
	for cs.ck.Now().Before(deadline) {
		if m := re.FindStringSubmatch(c.stdout() + "\n" + c.stderr()); m != nil { // the servers' start line is a log line on stderr
			return c, m, nil
		}
		select {
		case <-c.done:
			return nil, nil, fmt.Errorf("%w: %s exited before printing its address: %s", errChild, name, tail(c.stderr()+c.stdout()))
		case <-cs.ck.NewTimer(20 * time.Millisecond).C():
		}
	}
	return nil, nil, fmt.Errorf("%w: %s printed no address in 30s: %s", errChild, name, tail(c.stderr()+c.stdout()))
}

// stopAll ends every child: SIGTERM, then SIGKILL after 3 s.
func (cs *children) stopAll() {
	cs.mu.Lock()
	list := cs.list
	cs.list = nil
	cs.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		_ = list[i].cmd.Process.Signal(syscall.SIGTERM)
	}
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		select {
		case <-c.done:
		case <-cs.ck.NewTimer(3 * time.Second).C():
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}

// tail is the last lines of a process's output, for an error message.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, " | ")
}

// reexecPinned runs this program again on CPU loadCPU (taskset) with the
// same arguments and exits with its status. Re-executing is the only way
// to pin every thread of a Go process: the runtime's threads already
// exist when main starts.
func reexecPinned(p pinning) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: pin: %w", err)
	}
	argv := append([]string{"taskset", "-c", strconv.Itoa(p.LoadCPU), self}, os.Args[1:]...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), pinEnv+"=1", cpusEnv+"="+strconv.Itoa(p.LoadCPU+1))
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		return fmt.Errorf("bench: pin: %w", err)
	}
	os.Exit(0)
	return nil
}

// cpusEnv passes the machine's CPU count to the pinned process, which
// sees only its one CPU.
const cpusEnv = "FENCEGATE_BENCH_CPUS"
