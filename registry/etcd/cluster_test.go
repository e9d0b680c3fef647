package etcd_test

import (
	"testing"

	"github.com/fencegate/fencegate/internal/etcdtest"
)

// TestConformanceThreeMembers runs the suite on a three-member etcd, the
// client spread over every member: each decision's transaction goes
// through Raft to a quorum, and a read through a follower is linearizable
// (read index) like one through the leader.
func TestConformanceThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes; -short runs the one-member suite only")
	}
	conformance(t, etcdtest.Start(t, 3))
}
