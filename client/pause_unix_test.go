//go:build unix

package client_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

const pauseChildEnv = "FENCEGATE_TEST_PAUSE_CHILD"

// TestPausedWorkerFindsItselfExpired is the stalled-worker story with the SDK: a
// worker (a child process, this test binary re-executed) acquires and
// writes, is frozen with SIGSTOP past its TTL while another worker takes
// over and writes, and is thawed with SIGCONT. On waking it must find
// itself not holding the lease (OWNERSHIP_UNKNOWN at once, EXPIRED when the
// registry answers) and send nothing: the front of the sidecar sees no
// request from it after SIGCONT, the backend no write of its fence after
// SIGSTOP.
func TestPausedWorkerFindsItselfExpired(t *testing.T) {
	if os.Getenv(pauseChildEnv) != "" {
		t.Skip("in the child")
	}
	s := newStack(t)
	ctx := context.Background()

	// The child's way to the sidecar, recording who sent what when.
	var mu sync.Mutex
	var arrivals []time.Time
	target, _ := url.Parse(s.sidecar)
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(identity.DefaultHeader) == "worker-a" && r.Method == http.MethodPut {
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestPausedWorkerChild$", "-test.v")
	cmd.Env = append(os.Environ(), pauseChildEnv+"=1",
		"FENCEGATE_TEST_REGISTRY="+s.regFault.URL(), "FENCEGATE_TEST_SIDECAR="+front.URL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	var all []string
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "CHILD "); ok {
				lines <- l
			}
		}
		close(lines)
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child ended while waiting for %s; output %q; stderr %s", what, all, stderr.String())
			}
			all = append(all, l)
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("timed out waiting for %s; output %q", what, all)
		}
		return ""
	}

	var fence uint64
	if l := next("HELD"); !strings.HasPrefix(l, "HELD") {
		t.Fatalf("child: %q", l)
	} else if _, err := fmt.Sscanf(l, "HELD fence=%d", &fence); err != nil {
		t.Fatalf("child: %q: %v", l, err)
	}
	if l := next("a first write"); !strings.HasPrefix(l, "WROTE 1") {
		t.Fatalf("child: %q", l)
	}
	// Freeze it between two writes (it idles 300 ms after each).
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()

	// worker-b waits for the lease, gets it once the child's expires, and writes.
	hb, err := s.mustWorker(t, "worker-b").Hold(ctx, "batch/paused", client.WithTTL(10*time.Second), client.WithWait(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Release(ctx)
	if hb.Fence() <= fence {
		t.Fatalf("worker-b's fence %d is not above the child's %d", hb.Fence(), fence)
	}
	rep, err := hb.Transport(client.WithHeader(identity.DefaultHeader, "worker-b")).RunSegments(ctx, 1,
		func(ctx context.Context, seq uint64) (*http.Request, error) {
			return s.put(ctx, batchPath+"paused", "b-1"), nil
		})
	if err != nil || !rep.Complete() {
		t.Fatalf("worker-b: %v", err)
	}
	// The pause lasts at least two TTLs (worker-b got the lease only once
	// the child's had expired anyway).
	time.Sleep(time.Until(stoppedAt.Add(time.Second)))
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	contAt := time.Now()

	var final string
	for final == "" {
		l := next("the child's final state")
		switch {
		case strings.HasPrefix(l, "WROTE"):
			t.Fatalf("the child wrote after waking: %q (output %q)", l, all)
		case strings.HasPrefix(l, "FINAL"):
			final = strings.TrimPrefix(l, "FINAL ")
		}
	}
	if final != "EXPIRED" {
		t.Fatalf("child's final state %q, want EXPIRED (output %q)", final, all)
	}
	if !hasPrefix(all, "REFUSED") {
		t.Fatalf("the child never tried (and failed) to write after waking: %q", all)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	t.Logf("child: %q", all)
	mu.Lock()
	defer mu.Unlock()
	for _, at := range arrivals {
		if at.After(contAt) {
			t.Fatalf("a write of the child reached the sidecar's front after SIGCONT (output %q)", all)
		}
	}
	for _, w := range s.backend.all() {
		if w.Fence == fmt.Sprint(fence) && w.At.After(stoppedAt) {
			t.Fatalf("the backend got a write of the child's fence after SIGSTOP: %+v", w)
		}
	}
	if got := s.backend.bodies(); len(got) != 2 || got[0] != "a-1" || got[1] != "b-1" {
		t.Fatalf("backend got %q, want a-1 then b-1", got)
	}
}

func hasPrefix(lines []string, p string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// TestPausedWorkerChild is the worker of TestPausedWorkerFindsItselfExpired
// (it runs only as its child): hold batch/paused with a 500 ms TTL, write
// a segment, idle 300 ms, write the next, ... until the lease is lost;
// then report the final state.
func TestPausedWorkerChild(t *testing.T) {
	if os.Getenv(pauseChildEnv) == "" {
		t.Skip("runs only as the child of TestPausedWorkerFindsItselfExpired")
	}
	say := func(format string, a ...any) { fmt.Printf("CHILD "+format+"\n", a...) }
	ctx := context.Background()
	// The child's connections end with it (TestMain's goleak checks the
	// child too): the registry's pool here, the sidecar's DefaultTransport.
	regTr := http.DefaultTransport.(*http.Transport).Clone()
	defer regTr.CloseIdleConnections()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	c, err := client.New(os.Getenv("FENCEGATE_TEST_REGISTRY"), client.WithIdentityHeader(identity.DefaultHeader, "worker-a"),
		client.WithHTTPClient(&http.Client{Transport: regTr}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hold(ctx, "batch/paused", client.WithTTL(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	say("HELD fence=%d", h.Fence())
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	sidecar := os.Getenv("FENCEGATE_TEST_SIDECAR")
	deadline := time.Now().Add(30 * time.Second)
	for seq := uint64(1); time.Now().Before(deadline); {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, sidecar+batchPath+"paused", strings.NewReader(fmt.Sprintf("a-%d", seq)))
		req.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(seq))
		resp, err := verdict(tr.RoundTrip(req))
		switch {
		case err != nil:
			say("REFUSED %v", err)
		default:
			resp.Body.Close()
			say("WROTE %d %d %s", seq, resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt))
			seq++
		}
		select {
		case <-h.Done():
			say("FINAL %s", h.State())
			return
		default:
		}
		time.Sleep(300 * time.Millisecond) // "thinking"; frozen here by the parent
	}
	say("FINAL %s (timed out)", h.State())
}
