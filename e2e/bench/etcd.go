package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/fencegate/fencegate/internal/etcdtest"
)

// reEtcdReady is the etcd member's ready line (internal/etcdtest/etcdserver).
var reEtcdReady = regexp.MustCompile(`etcdserver: ready`)

// startEtcd runs a one-member etcd cluster for the etcd registry: the
// member of internal/etcdtest (go.etcd.io/etcd/server/v3/embed at the
// client's version, --max-txn-ops 1024 as registry/etcd needs), its data
// directory in the run's scratch directory. etcd cannot bind port 0 for its
// peer URL: ports are picked free just before, and others tried if someone
// took one in between.
func (s *stack) startEtcd() error {
	bin, err := etcdtest.Binary()
	if err != nil {
		return err
	}
	var last error
	for attempt := range 5 {
		dir := filepath.Join(s.dir, "etcd-"+strconv.Itoa(attempt))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		client, err := freePort()
		if err != nil {
			return err
		}
		peer, err := freePort()
		if err != nil {
			return err
		}
		clientURL, peerURL := "http://127.0.0.1:"+strconv.Itoa(client), "http://127.0.0.1:"+strconv.Itoa(peer)
		c, _, err := s.procs.start("etcd", reEtcdReady, dir, bin, "-name", "m0", "-data-dir", filepath.Join(dir, "data"),
			"-client-url", clientURL, "-peer-url", peerURL, "-initial-cluster", "m0="+peerURL,
			"-max-txn-ops", "1024", "-log", filepath.Join(dir, "etcd.log"))
		if err == nil {
			s.etcd, s.etcdURL = c, clientURL
			return nil
		}
		last = fmt.Errorf("%w (log: %s)", err, tail(readFile(filepath.Join(dir, "etcd.log"))))
	}
	return last
}

// readFile is path's content, or "" when it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
