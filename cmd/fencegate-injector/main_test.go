package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/fencegate/fencegate/internal/lockedbuf"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServes runs the command: the webhook answers a real AdmissionReview
// over TLS with the patch, /readyz turns ready, a rotated certificate
// (a Secret volume's ..data swapped, as the kubelet does) is served to new
// connections without a restart, and the command exits 0 when its context
// ends.
func TestServes(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "injector-ca")
	vol := tlsfilestest.NewSecretVolume(t, ca.Server(t, "127.0.0.1"), ca.PEM)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "injector.yaml", "image: registry.example.org/fencegate:0.1.0\nnative: never\n")
	port, health := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	// The log is written by controller-runtime's certificate watcher too,
	// whose goroutine may still log after run returned (a race -race
	// reported in a clean-clone CI run): reads and writes are locked.
	var stderr lockedbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfg, "--cert-dir", filepath.Dir(vol.Files().Cert),
			"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--health-listen", fmt.Sprintf("127.0.0.1:%d", health)}, &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d, want 0\n%s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
			t.Errorf("no shutdown line in the log:\n%s", stderr.String())
		}
	}()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	waitReady(t, client, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), done)

	body, err := os.ReadFile(filepath.Join("..", "..", "inject", "webhook", "testdata", "pod-create.json"))
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/inject", port)
	first := servedSerial(t, client, url, body)

	next := ca.Server(t, "127.0.0.1")
	vol.Swap(t, next, ca.PEM)
	deadline := time.Now().Add(30 * time.Second)
	for servedSerial(t, client, url, body) != next.Serial {
		if time.Now().After(deadline) {
			t.Fatalf("still serving certificate %d after the rotation to %d", first, next.Serial)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitReady polls /readyz until it answers 200 (the webhook server has
// started), failing if the command exits first.
func waitReady(t *testing.T, client *http.Client, url string, done chan int) {
	t.Helper()
	for range 300 {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("the command exited %d before it was ready", code)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("/readyz never answered 200")
}

// servedSerial posts the AdmissionReview, checks that the answer patches
// the pod, and returns the serial number of the certificate served.
func servedSerial(t *testing.T, client *http.Client, url string, body []byte) int64 {
	t.Helper()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || !out.Response.Allowed || len(out.Response.Patch) == 0 {
		t.Fatalf("answer %+v, want allowed with a patch", out.Response)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

func TestRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "image: x\nnatve: never\n")
	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"-h"}, 0, "Usage: fencegate-injector", ""},
		{[]string{"--bogus"}, 2, "", "flag provided but not defined: -bogus (see fencegate-injector -h)"},
		{[]string{"extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"--config", bad}, 2, "", `unknown field \"natve\"`},
		{[]string{"--version"}, 0, "fencegate-injector ", ""},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
		if c.code == 2 && strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("%v: the error is not one line: %q", c.args, stderr.String())
		}
	}
}
