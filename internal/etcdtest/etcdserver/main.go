// Command etcdserver is the etcd member that package etcdtest runs: a
// small main over go.etcd.io/etcd/server/v3/embed, at the version of the
// client the registry uses, so tests run real etcd processes without an
// etcd installation. It is a test tool, not part of fencegate.
//
// It prints "etcdserver: ready" on stdout once the member serves clients
// (for a new cluster: once the cluster has a leader), and stops on SIGTERM
// or SIGINT, or when the server fails.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

// readyLine is what etcdtest waits for on stdout.
const readyLine = "etcdserver: ready"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("etcdserver", flag.ContinueOnError)
	name := fs.String("name", "m0", "member name")
	dir := fs.String("data-dir", "", "data directory (required)")
	client := fs.String("client-url", "", "client URL to listen on and advertise (required)")
	peer := fs.String("peer-url", "", "peer URL to listen on and advertise (required)")
	advertisePeer := fs.String("advertise-peer-url", "", "peer URL to advertise instead of -peer-url (a proxy in front of it)")
	cluster := fs.String("initial-cluster", "", "name=peerURL,... of every member (required)")
	state := fs.String("initial-cluster-state", "new", "new or existing")
	token := fs.String("initial-cluster-token", "etcdtest", "cluster token")
	logFile := fs.String("log", "", "log file (stderr when empty)")
	maxTxnOps := fs.Uint("max-txn-ops", 1024, "most operations in one transaction (etcd's default is 128; the registry needs 1024: registry/etcd)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *client == "" || *peer == "" || *cluster == "" {
		return fmt.Errorf("-data-dir, -client-url, -peer-url and -initial-cluster are required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		return fmt.Errorf("client url: %w", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		return fmt.Errorf("peer url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = *name, *dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	if *advertisePeer != "" {
		au, err := url.Parse(*advertisePeer)
		if err != nil {
			return fmt.Errorf("advertise peer url: %w", err)
		}
		cfg.AdvertisePeerUrls = []url.URL{*au}
	}
	cfg.InitialCluster, cfg.ClusterState, cfg.InitialClusterToken = *cluster, *state, *token
	cfg.MaxTxnOps = *maxTxnOps
	cfg.LogLevel = "warn"
	if *logFile != "" {
		cfg.LogOutputs = []string{*logFile}
	}
	return serve(cfg)
}

func serve(cfg *embed.Config) error {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer e.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println(readyLine)
	case err := <-e.Err():
		return fmt.Errorf("serve: %w", err)
	case <-sig:
		return nil
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("serve: %w", err)
	case <-sig:
		return nil
	}
}
