package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

func main() {
	registry := flag.String("registry", "", "registry URL")
	sidecar := flag.String("sidecar", "", "sidecar URL")
	owner := flag.String("owner", "", "workload identity (insecure-dev header)")
	resource := flag.String("resource", "", "resource ID to lock")
	path := flag.String("path", "", "path the writes go to")
	ttl := flag.Duration("ttl", time.Second, "lease TTL")
	wait := flag.Duration("wait", 0, "how long to wait for the lease")
	flag.Parse()

	c, err := client.New(*registry, client.WithIdentityHeader("X-Fencegate-Identity", *owner))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	l, err := c.Acquire(context.Background(), client.AcquireRequest{Resource: *resource, RequestID: *owner + "-worker", TTL: *ttl, Wait: *wait})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: acquire:", err)
		os.Exit(1)
	}
	fmt.Printf("held fence=%d lease=%s\ngrant=%s\n", l.FenceToken, l.Lease, l.Grant)

	// What the worker holds from now on, never refreshed: the stale
	// "locked = true".
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		seg, body, _ := strings.Cut(in.Text(), " ")
		req, err := http.NewRequest(http.MethodPut, *sidecar+*path, strings.NewReader(body))
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		req.Header.Set("X-Fencegate-Identity", *owner)
		req.Header.Set(fencegate.HeaderGrant, l.Grant)
		req.Header.Set(fencegate.HeaderStatus, l.Status)
		req.Header.Set(fencegate.HeaderSegment, seg)
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Printf("result seg=%s body=%s status=0 code=NO_ANSWER\n", seg, body)
			continue
		}
		code := "-"
		if resp.StatusCode >= 400 {
			if p, err := fencegate.ReadProblem(resp); err == nil {
				code = string(p.Code)
			}
		}
		resp.Body.Close()
		fmt.Printf("result seg=%s body=%s status=%d code=%s\n", seg, body, resp.StatusCode, code)
	}
}
