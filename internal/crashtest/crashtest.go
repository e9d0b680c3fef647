package crashtest

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// startTimeout bounds the wait for the child's first report.
const startTimeout = 30 * time.Second

// Run starts os.Args[0] running only the test helper (its name, matched
// exactly) with env added to the environment, collects the lines the child
// prints, and kills it with SIGKILL: a random while up to after once it
// printed its first line, or, with early, a random while up to after from
// its start (during its open or first transactions). A line starting with
// "ERR" fails t (the child found something wrong), as does a child that
// ended otherwise than by the kill. It returns the child's other lines and
// whether it had reported anything before the kill.
func Run(t testing.TB, helper string, env []string, rng *rand.Rand, early bool, after time.Duration) (lines []string, working bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		bad     []string
		started = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ERR") {
				bad = append(bad, line)
			} else {
				if len(lines) == 0 {
					close(started)
				}
				lines = append(lines, line)
			}
		}
	}()
	clk := clock.Real()
	if !early {
		t := clk.NewTimer(startTimeout)
		select {
		case <-started:
		case <-done:
		case <-t.C():
		}
		t.Stop()
	}
	clock.Sleep(clk, time.Duration(rng.Int64N(int64(after))), nil)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("crashtest: kill: %v", err)
	}
	<-done
	err = cmd.Wait()
	if len(bad) > 0 {
		t.Fatalf("crashtest: the child failed: %v", bad)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("crashtest: the child ended by %v, not by SIGKILL", err)
	}
	return lines, len(lines) > 0
}

// The child's side. A child is a test function that runs only when Run
// started it: Child gates it, Report prints what returned, Fail stops it
// with a line Run turns into the parent's failure.

// Child returns the value of env when this test binary runs as a crash-test
// child (Run sets it), and skips t in a normal run.
func Child(t *testing.T, env string) string {
	v := os.Getenv(env)
	if v == "" {
		t.Skip("the child of a crash test; runs only under crashtest.Run")
	}
	return v
}

var reportMu sync.Mutex

// Report prints one report line on stdout, whole (safe for concurrent use).
func Report(format string, args ...any) {
	reportMu.Lock()
	defer reportMu.Unlock()
	fmt.Printf(format+"\n", args...)
}

// Fail reports that the child found something wrong ("ERR ..." fails the
// parent's test) and ends the child.
func Fail(format string, args ...any) {
	Report("ERR "+format, args...)
	os.Exit(3)
}
