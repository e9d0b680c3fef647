package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/server"
)

// etcdConfig is a valid configuration on the etcd backend at endpoints.
func etcdConfig(t *testing.T, endpoints ...string) server.Config {
	c := server.Default()
	c.Listen = "127.0.0.1:0"
	c.DataDir = t.TempDir()
	c.Identity.Mode = "insecure-header"
	c.Backend = "etcd"
	c.Etcd = server.EtcdConfig{Endpoints: endpoints, Prefix: "srvtest"}
	return c
}

// TestEtcdConfigReportsEveryError: every problem of the etcd section is
// reported at once, each under its key.
func TestEtcdConfigReportsEveryError(t *testing.T) {
	c := etcdConfig(t)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "etcd.endpoints: required") {
		t.Fatalf("etcd backend without endpoints accepted: %v", err)
	}
	c = etcdConfig(t, "127.0.0.1:2379", "ftp://h:1", "http://a:1", "https://b:2", "http://c:3/path")
	c.Etcd.DialTimeout = -time.Second
	c.Etcd.RetryFor = -time.Second
	c.Etcd.AttemptTimeout = 16 * time.Second
	c.Etcd.Username = "reg"
	c.Etcd.Prefix = "p/"
	c.Etcd.TLS.CertFile = "c.crt"
	err := c.Validate()
	for _, want := range []string{"etcd.endpoints[0]", "etcd.endpoints[1]", "etcd.endpoints[4]", "mixes http and https",
		"etcd.dialTimeout", "etcd.retryFor: -1s", "etcd.attemptTimeout: 16s", "username and passwordFile", "etcd.prefix", "etcd.tls: certFile and keyFile", "etcd.tls: files or serverName set without enabled"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q: %v", want, err)
		}
	}
	c = etcdConfig(t, "https://a:1")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "https needs tls.enabled") {
		t.Errorf("https without tls accepted: %v", err)
	}
	c.Etcd.TLS.Enabled = true
	if err := c.Validate(); err != nil {
		t.Errorf("https with tls refused: %v", err)
	}
	c.Etcd.Endpoints = []string{"http://a:1"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "http with tls.enabled") {
		t.Errorf("http with tls accepted: %v", err)
	}
}

// TestEtcdConfigLoads checks the YAML keys of the etcd section.
func TestEtcdConfigLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	os.WriteFile(path, []byte(`backend: etcd
etcd:
  endpoints: [https://e1:2379, https://e2:2379]
  dialTimeout: 3s
  retryFor: 10s
  attemptTimeout: 2s
  username: reg
  passwordFile: /run/secrets/etcd
  prefix: team-a
  stateFile: /var/lib/reg/etcd.json
  tls: {enabled: true, caFile: ca.pem, certFile: c.pem, keyFile: k.pem, serverName: etcd.internal}
`), 0o600)
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := server.EtcdConfig{Endpoints: []string{"https://e1:2379", "https://e2:2379"}, DialTimeout: 3 * time.Second,
		RetryFor: 10 * time.Second, AttemptTimeout: 2 * time.Second, Username: "reg", PasswordFile: "/run/secrets/etcd", Prefix: "team-a", StateFile: "/var/lib/reg/etcd.json"}
	want.TLS.Enabled, want.TLS.CAFile, want.TLS.CertFile, want.TLS.KeyFile, want.TLS.ServerName = true, "ca.pem", "c.pem", "k.pem", "etcd.internal"
	if c.Backend != "etcd" || !reflect.DeepEqual(c.Etcd, want) {
		t.Fatalf("loaded %q %+v, want etcd %+v", c.Backend, c.Etcd, want)
	}
}

// stop runs s until its context is done: at once (it closes the listener
// and the backend).
func stop(s *server.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Run(ctx)
}

// TestEtcdBackendAssembly starts the server on a three-member etcd,
// grants a lease, and reads its fence back through a second server on
// one other member (another registry replica).
func TestEtcdBackendAssembly(t *testing.T) {
	cl := etcdtest.Start(t, 3)
	ctx := context.Background()
	s1, err := server.New(etcdConfig(t, cl.Member(0).Endpoint(), cl.Member(1).Endpoint()), nil)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	res, err := s1.Registry.Acquire(ctx, registry.AcquireRequest{Resource: "srv/r", Owner: "o", RequestID: "q1", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	stop(s1)
	s2, err := server.New(etcdConfig(t, cl.Member(2).Endpoint()), nil)
	if err != nil {
		t.Fatalf("second server.New: %v", err)
	}
	defer stop(s2)
	v, err := s2.Registry.Resource(ctx, "srv/r")
	if err != nil {
		t.Fatalf("resource: %v", err)
	}
	if v.Record.LastFence != res.View.Lease.Fence || v.Record.Holder != res.View.Lease.Lease {
		t.Fatalf("second server reads LastFence %d holder %q, want %d %q", v.Record.LastFence, v.Record.Holder, res.View.Lease.Fence, res.View.Lease.Lease)
	}
}

// TestEtcdBackendUnreachable: the server refuses to start on endpoints
// nothing answers at.
func TestEtcdBackendUnreachable(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	cl.Member(0).Kill()
	c := etcdConfig(t, cl.Endpoints()...)
	c.Etcd.DialTimeout = time.Second
	if s, err := server.New(c, nil); err == nil {
		stop(s)
		t.Fatal("server.New succeeded with no etcd to talk to")
	} else if !strings.Contains(err.Error(), "etcd") {
		t.Errorf("refusal %q does not name etcd", err)
	}
}

// TestEtcdStateFile: the etcd backend keeps its watermark and fence
// ceiling in dataDir/etcd-state.json by default, or in etcd.stateFile;
// after a grant and a stop the file holds a ceiling at or above the fence.
func TestEtcdStateFile(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	for _, explicit := range []bool{false, true} {
		c := etcdConfig(t, cl.Endpoints()...)
		c.Etcd.Prefix = fmt.Sprintf("state%t", explicit)
		want := filepath.Join(c.DataDir, "etcd-state.json")
		if explicit {
			want = filepath.Join(t.TempDir(), "elsewhere.json")
			c.Etcd.StateFile = want
		}
		s, err := server.New(c, nil)
		if err != nil {
			t.Fatalf("server.New: %v", err)
		}
		res, err := s.Registry.Acquire(context.Background(), registry.AcquireRequest{Resource: "srv/r", Owner: "o", RequestID: "q1", TTL: time.Minute})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		stop(s)
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatalf("state file (stateFile set: %t): %v", explicit, err)
		}
		var st struct {
			Ceiling uint64 `json:"fenceCeiling"`
		}
		if err := json.Unmarshal(b, &st); err != nil || st.Ceiling < res.View.Lease.Fence {
			t.Errorf("state file %s: %s (%v), want a ceiling at or above fence %d", want, b, err, res.View.Lease.Fence)
		}
	}
}
