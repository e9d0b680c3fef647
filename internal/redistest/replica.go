package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
)

// StartReplica starts a redis-server replicating primary (REPLICAOF) and
// waits until its link to the primary is up, so that a write on the
// primary after StartReplica returns reaches it. args are appended.
func StartReplica(tb testing.TB, primary *Server, args ...string) *Server {
	tb.Helper()
	// The primary would wait 5s (repl-diskless-sync-delay) for more
	// replicas before the first sync.
	pc := goredis.NewClient(&goredis.Options{Addr: primary.Addr()})
	err := pc.ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err()
	pc.Close()
	if err != nil {
		tb.Fatalf("redistest: replica: %v", err)
	}
	r := Start(tb, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port())}, args...)...)
	r.WaitLinkUp()
	return r
}

// WaitLinkUp waits (10s at most) until the server, a replica, reports
// master_link_status:up.
func (s *Server) WaitLinkUp() {
	s.tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	clk := clock.Real()
	deadline := clk.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if clk.Now().After(deadline) {
			s.tb.Fatalf("redistest: replica %s never linked to its primary: %v %q", s.Addr(), err, info)
		}
		clock.Sleep(clk, 20*time.Millisecond, nil)
	}
}
