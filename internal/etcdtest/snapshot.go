package etcdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
)

// Snapshot saves a snapshot of the cluster's keyspace (from its first
// member, as `etcdctl snapshot save` does) into a new file of tb's and
// returns its path. It fails tb on an error.
func (c *Cluster) Snapshot(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "snapshot.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := clientv3.Config{Endpoints: []string{c.members[0].Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		tb.Fatalf("etcdtest: snapshot: %v", err)
	}
	return path
}

// RestoreOptions are etcdutl snapshot restore's options that change what
// the restored cluster's revision is.
type RestoreOptions struct {
	// BumpRevision, when positive, is --bump-revision (with
	// --mark-compacted, which etcd requires with it): the restored
	// cluster's revision is the snapshot's plus this, and every revision
	// up to it is compacted, so a watch resumed at an older revision is
	// cancelled instead of seeing revisions reused.
	BumpRevision uint64
}

// Restore stops every member, replaces each one's data directory by the
// snapshot restored with etcd's own tool (etcdutl snapshot restore, with
// the member's name, peer URL and the cluster's membership), and starts
// the members again on the same ports, returning once each serves
// clients. It fails tb on an error.
func (c *Cluster) Restore(tb testing.TB, snap string, o RestoreOptions) {
	tb.Helper()
	util, err := UtilBinary()
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range c.members {
		m.Stop()
	}
	for _, m := range c.members {
		if err := m.restore(util, snap, o); err != nil {
			tb.Fatal(err)
		}
	}
	for _, m := range c.members {
		m.Kill()
		if err := m.spawn(); err != nil {
			tb.Fatalf("etcdtest: start %s after the restore: %v", m.name, err)
		}
	}
	for _, m := range c.members {
		if err := m.waitReady(); err != nil {
			tb.Fatalf("etcdtest: start %s after the restore: %v", m.name, err)
		}
	}
}

// restore replaces the member's (stopped) data directory by snap.
func (m *Member) restore(util, snap string, o RestoreOptions) error {
	if err := os.RemoveAll(m.Dir()); err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	args := []string{"snapshot", "restore", snap,
		"--data-dir", m.Dir(),
		"--name", m.name,
		"--initial-cluster", m.initialCluster,
		"--initial-cluster-token", "etcdtest", // etcdserver's default
		"--initial-advertise-peer-urls", m.peerURL(),
	}
	if o.BumpRevision > 0 {
		args = append(args, "--bump-revision", strconv.FormatUint(o.BumpRevision, 10), "--mark-compacted")
	}
	if out, err := exec.Command(util, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("etcdtest: etcdutl snapshot restore for %s: %w\n%s", m.name, err, out)
	}
	return nil
}
