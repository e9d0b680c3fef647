package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/server"
)

// runOnce starts a bolt registry over dataDir with the start floor floor,
// acquires one lease on resource, stops, and returns the start meta and
// the fence granted.
func runOnce(t *testing.T, dataDir string, floor uint64, resource, requestID string) (registry.Meta, uint64) {
	t.Helper()
	c := server.Default()
	c.Listen = "127.0.0.1:0"
	c.DataDir = dataDir
	c.Identity.Mode = "insecure-header"
	c.FenceFloor = floor
	s, err := server.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	res, err := s.Registry.Acquire(ctx, registry.AcquireRequest{Resource: resource, Owner: "w", RequestID: requestID})
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatalf("run: %v", rerr)
	}
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return s.StartMeta(), res.View.Lease.Fence
}

// TestStartFenceFloor: fenceFloor raises the global floor before the
// registry serves, so the first grant is above it; a lower (or no) floor
// at a later start never lowers it; the data set's lineage is written at
// the first start and kept by every later one.
func TestStartFenceFloor(t *testing.T) {
	dir := t.TempDir()
	m, fence := runOnce(t, dir, 1000, "floor/a", "r1")
	if m.FenceFloor != 1000 || fence != 1001 || fencegate.ValidateLineage(m.Lineage) != nil {
		t.Fatalf("first start with floor 1000: meta %+v, first fence %d", m, fence)
	}
	lineage := m.Lineage
	for i, floor := range []uint64{10, 0} {
		m, fence = runOnce(t, dir, floor, fmt.Sprintf("floor/b%d", i), fmt.Sprintf("r%d", i+2))
		if m.FenceFloor != 1000 || m.Lineage != lineage || fence <= 1000 {
			t.Fatalf("restart with floor %d: meta %+v, fence %d; want floor 1000 kept, lineage %q kept", floor, m, fence, lineage)
		}
	}
	m, fence = runOnce(t, dir, 5000, "floor/c", "r9")
	if m.FenceFloor != 5000 || fence != 5001 || m.Lineage != lineage {
		t.Fatalf("restart with floor 5000: meta %+v, fence %d", m, fence)
	}
	// Another data set (a new registry) has another lineage.
	if other, _ := runOnce(t, t.TempDir(), 0, "floor/a", "r1"); other.Lineage == lineage || fencegate.ValidateLineage(other.Lineage) != nil {
		t.Fatalf("a new data set's lineage %q (the first's %q)", other.Lineage, lineage)
	}
}

// TestFenceFloorConfigLoads: the fenceFloor key.
func TestFenceFloorConfigLoads(t *testing.T) {
	path := writeConfig(t, "fenceFloor: 18446744073709551615\n")
	c, err := server.Load(path)
	if err != nil || c.FenceFloor != 1<<64-1 {
		t.Fatalf("loaded %d, %v", c.FenceFloor, err)
	}
	if _, err := server.Load(writeConfig(t, "fenceFloor: -1\n")); err == nil {
		t.Fatal("a negative fenceFloor loaded")
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
