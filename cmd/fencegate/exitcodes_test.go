package main

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// acquired runs grant acquire -o json and returns the lease's ID.
func acquired(t *testing.T, url, owner, resource string, extra ...string) string {
	t.Helper()
	r := runCLI(t, append([]string{"grant", "acquire", "--registry", url, "--owner", owner, "--resource", resource, "-o", "json"}, extra...)...)
	if r.code != exitOK {
		t.Fatalf("acquire %s by %s: exit %d %s", resource, owner, r.code, r.stderr)
	}
	var l struct{ Lease, Grant string }
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatal(err)
	}
	if l.Grant != "" {
		t.Errorf("grant acquire printed the bearer grant without --print-grant")
	}
	return l.Lease
}

// closedURL is the URL of a loopback port nobody listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestExitCodes: each class of outcome has its own exit code, against a
// real registry over HTTP, and the message says what to do next.
func TestExitCodes(t *testing.T) {
	srv, _ := registrytest.Serve(t)
	url := srv.URL
	lease := acquired(t, url, "worker-a", "exit/1")
	released := acquired(t, url, "worker-a", "exit/2")
	if r := runCLI(t, "grant", "release", "--registry", url, "--owner", "worker-a", "--lease", released); r.code != exitOK {
		t.Fatalf("release: %d %s", r.code, r.stderr)
	}
	grantFile := filepath.Join(t.TempDir(), "g.jws")
	acquired(t, url, "worker-c", "exit/3", "--grant-out", grantFile)
	raw, _ := os.ReadFile(grantFile)
	raw[len(raw)/2] ^= 1
	tampered := filepath.Join(t.TempDir(), "bad.jws")
	if err := os.WriteFile(tampered, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stderr
		not  []string
	}{
		{"bad flag", []string{"grant", "acquire", "--bogus"}, exitUsage, []string{"unknown flag: --bogus", "Run 'fencegate grant acquire --help'"}, nil},
		{"flag of another subcommand", []string{"grant", "release", "--ttl", "5s", "--lease", lease}, exitUsage, []string{"unknown flag: --ttl"}, nil},
		{"admin token on grant", []string{"grant", "acquire", "--admin-token-file", "x", "--resource", "r"}, exitUsage, []string{"unknown flag: --admin-token-file"}, nil},
		{"missing flag", []string{"grant", "acquire", "--registry", url}, exitUsage, []string{"--resource is required"}, nil},
		{"unknown command", []string{"grnat"}, exitUsage, []string{`unknown command "grnat"`, "did you mean grant?"}, nil},
		{"unknown subcommand", []string{"grant", "aquire"}, exitUsage, []string{"did you mean acquire?"}, nil},
		{"bad -o", []string{"-o", "yaml", "version"}, exitUsage, []string{"-o/--output must be text or json"}, nil},
		{"held", []string{"grant", "acquire", "--registry", url, "--owner", "worker-b", "--resource", "exit/1"}, exitHeld,
			[]string{"the registry at " + url + " refused it, nothing was changed: 409 LEASE_HELD", "--wait"}, []string{"client:", "grant lookup"}},
		{"unreachable", []string{"grant", "acquire", "--registry", closedURL(t), "--owner", "w", "--resource", "r"}, exitUnreachable,
			[]string{"nothing was sent", "connection refused", "--registry"}, []string{"grant lookup", "outcome is unknown"}},
		{"not held", []string{"grant", "renew", "--registry", url, "--owner", "worker-a", "--lease", released}, exitNotHeld,
			[]string{"LEASE_NOT_HELD", "(state RELEASED)"}, nil},
		{"not owner", []string{"grant", "renew", "--registry", url, "--owner", "worker-b", "--lease", lease}, exitNotHeld, []string{"NOT_OWNER"}, nil},
		{"not found", []string{"grant", "lookup", "--registry", url, "--owner", "worker-a", "--request-id", "req-never"}, exitNotFound, []string{"NOT_FOUND"}, nil},
		{"no owner", []string{"grant", "renew", "--registry", url, "--lease", lease}, exitAuth,
			[]string{"IDENTITY_REQUIRED", "--owner is required"}, []string{"X-Fencegate-Identity header"}},
		{"grant rejected", []string{"grant", "inspect", "--registry", url, "--file", tampered}, exitRejected, []string{"grant rejected", "GRANT_INVALID"}, nil},
	} {
		r := runCLI(t, c.args...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, r.code, c.code, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, r.stderr)
			}
		}
		for _, w := range c.not {
			if strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr says %q:\n%s", c.name, w, r.stderr)
			}
		}
		if r.stdout != "" {
			t.Errorf("%s: a failure printed on stdout: %q", c.name, r.stdout)
		}
		if n := strings.Count(r.stderr, "unknown flag"); n > 1 {
			t.Errorf("%s: the error is printed %d times:\n%s", c.name, n, r.stderr)
		}
		// The same under -o json: one JSON object on stderr, the same exit.
		j := runCLI(t, append([]string{"-o", "json"}, c.args...)...)
		if c.name == "bad -o" {
			continue
		}
		var e struct {
			Error jsonError `json:"error"`
		}
		if err := json.Unmarshal([]byte(j.stderr), &e); err != nil || j.code != c.code || e.Error.Exit != c.code || e.Error.Class != exitClass[c.code] || e.Error.Message == "" {
			t.Errorf("%s -o json: exit %d, stderr %q (%v)", c.name, j.code, j.stderr, err)
		}
		if strings.Count(strings.TrimSpace(j.stderr), "\n") != 0 {
			t.Errorf("%s -o json: more than one line on stderr: %q", c.name, j.stderr)
		}
	}
}

// TestAcquireLostAnswer: when the connection breaks after the request was
// sent, grant acquire says the outcome is unknown and how to recover it,
// naming the request ID; exit 4.
func TestAcquireLostAnswer(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the request arrived; its answer is lost
		}
	}))
	defer srv.Close()
	r := runCLI(t, "grant", "acquire", "--registry", srv.URL, "--owner", "w", "--resource", "r/1", "--request-id", "req-lost")
	if r.code != exitUnreachable || got.Load() == 0 {
		t.Fatalf("exit %d after %d requests: %s", r.code, got.Load(), r.stderr)
	}
	for _, w := range []string{"may have reached it", "fencegate grant lookup --request-id req-lost"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
}

// TestTLSServerName: through an address the registry's certificate does
// not name (a port-forward to 127.0.0.1), the handshake fails before
// anything is sent and the message names --tls-server-name; with it, the
// command works.
func TestTLSServerName(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	front, caFile, got := tlsFront(t, reg)
	args := []string{"grant", "acquire", "--registry", front, "--ca", caFile, "--owner", "w", "--resource", "tls/1"}
	r := runCLI(t, args...)
	if r.code != exitUnreachable || got.Load() != 0 {
		t.Fatalf("without --tls-server-name: exit %d, %d requests reached the registry: %s", r.code, got.Load(), r.stderr)
	}
	for _, w := range []string{"nothing was sent", "--tls-server-name"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "grant lookup") {
		t.Errorf("a failed handshake sent nothing, yet the message tells to recover it:\n%s", r.stderr)
	}
	if r := runCLI(t, append(args, "--tls-server-name", "fencegate-registry.fencegate.svc")...); r.code != exitOK || got.Load() == 0 {
		t.Fatalf("with --tls-server-name: exit %d: %s", r.code, r.stderr)
	}
}

// tlsFront serves reg over TLS with a certificate that names only
// fencegate-registry.fencegate.svc (as cert-manager issues the registry's),
// reached on 127.0.0.1 as through a port-forward; it returns its URL, the
// CA file and the count of requests that reached reg.
func tlsFront(t *testing.T, reg *httptest.Server) (string, string, *atomic.Int32) {
	t.Helper()
	ca := tlsfilestest.NewCA(t, "test-ca")
	files := tlsfilestest.WriteFiles(t, t.TempDir(), ca.Server(t, "fencegate-registry.fencegate.svc"), ca.PEM)
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	got := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		reg.Config.Handler.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, files.CA, got
}
