package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/etcdtest"
)

func client(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestOneMemberKeepsWritesAcrossKill: a write acknowledged by a
// one-member cluster is read back after the member is killed (SIGKILL)
// and started again on its data directory.
func TestOneMemberKeepsWritesAcrossKill(t *testing.T) {
	c := etcdtest.Start(t, 1)
	m := c.Member(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := client(t, c.Endpoints()...)
	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatalf("put: %v", err)
	}
	pid := m.PID()
	m.Kill()
	if m.PID() != 0 {
		t.Fatalf("PID %d after Kill, want 0", m.PID())
	}
	m.Start()
	if m.PID() == 0 || m.PID() == pid {
		t.Fatalf("PID after Start %d (before %d): not a new process", m.PID(), pid)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("after restart k = %v, want v1", resp.Kvs)
	}
}

// TestThreeMembersServeWithOneDown: a three-member cluster commits a write
// with one member stopped, and the stopped member, started again, catches
// up (a read through it alone returns the write).
func TestThreeMembersServeWithOneDown(t *testing.T) {
	c := etcdtest.Start(t, 3)
	if n := len(c.Endpoints()); n != 3 {
		t.Fatalf("%d endpoints, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := client(t, c.Member(0).Endpoint(), c.Member(1).Endpoint())
	down := c.Member(2)
	down.Stop()
	if _, err := cli.Put(ctx, "k", "with-two"); err != nil {
		t.Fatalf("put with one member down: %v", err)
	}
	down.Start()
	solo := client(t, down.Endpoint())
	var got string
	// The restarted member applies the write as it catches up with the
	// leader; a linearizable read goes through the leader's read index and
	// sees it.
	resp, err := solo.Get(ctx, "k")
	if err != nil {
		t.Fatalf("get on the restarted member: %v", err)
	}
	if len(resp.Kvs) == 1 {
		got = string(resp.Kvs[0].Value)
	}
	if got != "with-two" {
		t.Fatalf("restarted member reads %q, want with-two", got)
	}
}
