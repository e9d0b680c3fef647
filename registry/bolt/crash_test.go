package bolt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/lockedbuf"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// crashEnv names the registry file for TestCrashHelper; when it is unset
// the helper is skipped.
const crashEnv = "FENCEGATE_BOLT_CRASH_DB"

var crashResources = []string{"crash/r0", "crash/r1", "crash/r2", "crash/r3"}

// TestCrashHelper is the child process of TestCrashKeepsFences: it
// acquires and releases (or abandons) leases on a few resources in a tight
// loop (one in seventeen is abandoned to expire) and prints "GRANTED <resource> <fence>" as soon as each Acquire
// returns, until it is killed.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("child process of TestCrashKeepsFences only")
	}
	be, err := bolt.OpenBackend(path, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	k := registrytest.NewKeys(t)
	reg := newRegistry(t, be, k, nil) // the real clock
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second) // in case the parent is gone
	for i := 0; time.Now().Before(deadline); i++ {
		res := crashResources[i%len(crashResources)]
		owner := fmt.Sprintf("crash-%d", os.Getpid())
		r, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: res, Owner: owner, RequestID: fmt.Sprintf("c%d", i), TTL: registry.DefaultMinTTL})
		if errors.Is(err, registry.ErrLeaseHeld) {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "acquire:", err)
			os.Exit(2)
		}
		// One write(2) per line: a pipe write this small is atomic.
		if _, err := os.Stdout.WriteString(fmt.Sprintf("GRANTED %s %d\n", res, r.View.Lease.Fence)); err != nil {
			os.Exit(2)
		}
		if i%17 == 16 {
			continue // abandoned: it expires
		}
		if _, err := reg.Release(ctx, owner, r.View.Lease.Lease); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			os.Exit(2)
		}
	}
	os.Exit(0)
}

// TestCrashKeepsFences kills a child that is granting leases with SIGKILL
// at random moments, several times, and checks after each kill that the
// file holds, for every resource, a LastFence at least as high as every
// fence the child reported, and that the fences of the next run are all
// above everything reported or stored before: no fence is ever reissued.
func TestCrashKeepsFences(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "registry.db")
	ctx := context.Background()
	reported := map[string]uint64{} // highest fence reported in all rounds so far
	stored := map[string]uint64{}   // LastFence read after the previous round
	const rounds = 5
	total := 0
	for round := range rounds {
		var stdout, stderr lockedbuf.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child: %v", err)
		}
		// Kill at a random moment once the child is granting.
		ok := waitUntil(10*time.Second, func() bool { return strings.Contains(stdout.String(), "GRANTED") })
		if ok {
			time.Sleep(time.Duration(200+rand.IntN(300)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill child: %v", err)
		}
		err := cmd.Wait()
		if !ok {
			t.Fatalf("round %d: the child granted nothing (exit %v); stderr:\n%s", round, err, stderr.String())
		}
		if ws, isExit := err.(*exec.ExitError); !isExit || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v before the kill; stderr:\n%s", round, err, stderr.String())
		}

		// Fences the child reported, in order, per resource.
		got := map[string][]uint64{}
		out := stdout.String()
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			out = out[:i+1] // drop a partial last line, if any
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "GRANTED" {
				continue
			}
			fence, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			got[f[1]] = append(got[f[1]], fence)
			total++
		}

		be, err := bolt.OpenBackend(path, 5*time.Second)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		for _, res := range crashResources {
			fences := got[res]
			floor := max(reported[res], stored[res])
			for _, f := range fences {
				if f <= floor {
					t.Errorf("round %d: %s: fence %d reissued or out of order (at or below %d, fences this round %v)", round, res, f, floor, fences)
				}
				floor = f
			}
			v, err := be.Resource(ctx, res, time.Now())
			if err != nil {
				t.Fatalf("round %d: read %s: %v", round, res, err)
			}
			if len(fences) > 0 {
				reported[res] = fences[len(fences)-1]
			}
			if v.Record.LastFence < reported[res] {
				t.Errorf("round %d: %s: stored LastFence %d is below reported fence %d: a granted fence was lost", round, res, v.Record.LastFence, reported[res])
			}
			if v.Record.LastFence < stored[res] {
				t.Errorf("round %d: %s: stored LastFence went back from %d to %d", round, res, stored[res], v.Record.LastFence)
			}
			stored[res] = v.Record.LastFence
		}
		if err := be.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		t.Logf("round %d: %d grants reported, LastFence %v", round, countAll(got), stored)
	}
	if total == 0 {
		t.Fatal("no grant reported at all")
	}
}

func countAll(m map[string][]uint64) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

func waitUntil(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
