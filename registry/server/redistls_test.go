package server_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/server"
	"github.com/fencegate/fencegate/tlsfiles"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// TestRedisTLS runs the registry on a real redis-server that speaks TLS
// (a managed Redis): with redis.tls and the server's CA it grants a lease;
// with another CA it refuses to start, and so does a config naming files
// without enabled: true.
func TestRedisTLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "redis-ca")
	files := tlsfilestest.WriteFiles(t, t.TempDir(), ca.Server(t, "127.0.0.1"), ca.PEM)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// The plain port stays for redistest's readiness PING.
	redistest.Start(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", files.Cert,
		"--tls-key-file", files.Key, "--tls-ca-cert-file", files.CA, "--tls-auth-clients", "no")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))

	c := redisConfig(t, addr)
	c.Redis.TLS = tlsfiles.ClientConfig{Enabled: true, CAFile: files.CA}
	s, err := server.New(c, nil)
	if err != nil {
		t.Fatalf("server.New over TLS: %v", err)
	}
	res, err := s.Registry.Acquire(context.Background(), registry.AcquireRequest{Resource: "tls/r", Owner: "o", RequestID: "q1", TTL: time.Minute})
	if err != nil || res.View.Lease.Fence != 1 {
		t.Fatalf("acquire over TLS: fence %d, %v", res.View.Lease.Fence, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Run(runCtx)

	other := tlsfilestest.WriteFiles(t, t.TempDir(), tlsfilestest.Leaf{}, tlsfilestest.NewCA(t, "other").PEM)
	c.Redis.TLS.CAFile = other.CA
	if s, err := server.New(c, nil); err == nil {
		_ = s.Run(runCtx)
		t.Fatal("a Redis whose certificate another CA signed was accepted")
	}

	c.Redis.TLS = tlsfiles.ClientConfig{CAFile: files.CA}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "redis.tls: files or serverName set without enabled: true") {
		t.Errorf("TLS files without enabled: %v", err)
	}
}
