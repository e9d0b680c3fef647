package e2e

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

var startLineRE = regexp.MustCompile(`lineage ([0-9a-z]+), fence floor (\d+), issuer epoch (\d+)\)`)

// TestRegistryStartFenceFloor runs the real binary: `fencegate registry
// --fence-floor N` raises the global floor before it serves (the first
// grant is N+1) and `--issuer-epoch E` the issuer epoch, it says both on its
// start line with the data set's lineage, and a later start with a lower
// floor or epoch never lowers them; the lineage stays the data set's across
// restarts.
func TestRegistryStartFenceFloor(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	acquire := func(reg *registry, resource string) *client.Lease {
		t.Helper()
		c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", "worker"))
		l, err := c.Acquire(ctx, client.AcquireRequest{Resource: resource, RequestID: "req-" + resource[len("floor/"):], TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	metaOf := func(reg *registry) fencegate.Meta {
		t.Helper()
		c, _ := client.New(reg.url) // --insecure-dev: admin from loopback
		m, err := c.Meta(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	var lineage string
	for i, c := range []struct {
		flag, epochFlag      string
		wantFloor, wantEpoch uint64
	}{{"1000", "", 1000, 1}, {"10", "4", 1000, 4}, {"", "2", 1000, 4}, {"5000", "", 5000, 4}} {
		extra := []string{}
		if c.flag != "" {
			extra = append(extra, "--fence-floor", c.flag)
		}
		if c.epochFlag != "" {
			extra = append(extra, "--issuer-epoch", c.epochFlag)
		}
		reg := startRegistry(t, dataDir, extra...)
		line := startLineRE.FindStringSubmatch(reg.Output())
		if line == nil || line[2] != fmt.Sprint(c.wantFloor) || line[3] != fmt.Sprint(c.wantEpoch) {
			t.Fatalf("start %d (--fence-floor %q --issuer-epoch %q): start line %q, want fence floor %d, issuer epoch %d",
				i, c.flag, c.epochFlag, reg.Stdout(), c.wantFloor, c.wantEpoch)
		}
		l := acquire(reg, fmt.Sprintf("floor/r%d", i))
		if l.FenceToken <= c.wantFloor || (i == 0 && l.FenceToken != 1001) {
			t.Fatalf("start %d: first fence %d, want above %d", i, l.FenceToken, c.wantFloor)
		}
		g, err := client.GrantClaims(l.Grant)
		if err != nil {
			t.Fatal(err)
		}
		m := metaOf(reg)
		if m.FenceFloor != c.wantFloor || m.IssuerEpoch != c.wantEpoch || g.IssuerEpoch != c.wantEpoch || m.Lineage != line[1] || g.Lineage != m.Lineage {
			t.Fatalf("start %d: meta %+v, start line lineage %q, grant lineage %q", i, m, line[1], g.Lineage)
		}
		if i == 0 {
			lineage = m.Lineage
		} else if m.Lineage != lineage {
			t.Fatalf("start %d: lineage %q, the data set's is %q", i, m.Lineage, lineage)
		}
		if err := reg.stop(); err != nil {
			t.Fatal(err)
		}
	}
	// A new registry (an empty data directory) has a new lineage.
	other := startRegistry(t, "")
	if m := metaOf(other); m.Lineage == lineage || fencegate.ValidateLineage(m.Lineage) != nil {
		t.Fatalf("a new registry's lineage %q, the first's %q", m.Lineage, lineage)
	}
	// A floor that is not a number is a usage error.
	if r := run(t, "registry", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--insecure-dev", "--fence-floor", "-3"); r.code == 0 {
		t.Fatalf("--fence-floor -3 accepted: %+v", r)
	}
}
