package etcdtest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a running etcd cluster of one or more member processes.
type Cluster struct {
	members []*Member
}

// startAttempts bounds how often Start tries new ports after a clash.
const startAttempts = 5

// Start starts an n-member cluster (n is 1 or 3, or any positive count)
// for tb, each member with args appended to its command line (etcdserver's
// flags, e.g. "-max-txn-ops", "128"), and registers the kill of every member with tb.Cleanup. It
// returns once every member serves clients; it fails tb when the server
// cannot be built or the cluster does not come up.
func Start(tb testing.TB, n int, args ...string) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("etcdtest: a cluster of %d members", n)
	}
	return startRetried(tb, "members", n, args, tryStart)
}

// startRetried builds the server and runs try until a cluster of n comes
// up, starting again on new ports while a member finds its port taken
// (at most startAttempts times); what names the cluster in tb's failure.
func startRetried[C any](tb testing.TB, what string, n int, args []string, try func(testing.TB, string, int, []string) (C, error)) C {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	var last error
	for range startAttempts {
		c, err := try(tb, bin, n, args)
		if err == nil {
			return c
		}
		last = err
		if !errPortTaken(err) {
			break
		}
	}
	tb.Fatalf("etcdtest: start %d %s: %v", n, what, last)
	var zero C
	return zero
}

// tryStart starts n members on fresh ports and data directories; on an
// error every member it started is killed.
func tryStart(tb testing.TB, bin string, n int, args []string) (*Cluster, error) {
	c := &Cluster{}
	var initial []string
	for i := range n {
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		m := newMember(tb, bin, fmt.Sprintf("m%d", i), client, peer)
		m.args = args
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL())
	}
	if err := c.launch(initial); err != nil {
		return nil, err
	}
	return c, nil
}

// launch starts every member of c with initial (name=peerURL of each) as
// the initial cluster and waits until each serves; on an error every
// member is killed.
func (c *Cluster) launch(initial []string) error {
	cluster := strings.Join(initial, ",")
	for _, m := range c.members {
		m.initialCluster = cluster
		if err := m.spawn(); err != nil {
			c.killAll()
			return err
		}
	}
	for _, m := range c.members {
		if err := m.waitReady(); err != nil {
			c.killAll()
			return err
		}
	}
	return nil
}

func (c *Cluster) killAll() {
	for _, m := range c.members {
		m.Kill()
	}
}

// Members returns the cluster's members, in the order of their names
// (m0, m1, ...).
func (c *Cluster) Members() []*Member { return append([]*Member(nil), c.members...) }

// Member returns member i.
func (c *Cluster) Member(i int) *Member { return c.members[i] }

// Endpoints returns every member's client URL (http://127.0.0.1:port), as
// a client's endpoint list.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.Endpoint()
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("etcdtest: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("etcdtest: free port: %w", err)
	}
	return port, nil
}

func portURL(port int) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
