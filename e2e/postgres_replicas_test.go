package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/pgtest"
)

// startPostgresReplicas is startReplicas on one PostgreSQL store (a
// database of its own), its DSN in a file as a mounted Secret holds it.
func startPostgresReplicas(t *testing.T, n int, statusMode string) (*replicaSet, string) {
	t.Helper()
	db := pgtest.Database(t)
	dsn := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(dsn, []byte(db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startReplicasOn(t, n, statusMode, `{backend: postgres, service: e2e-pg, claimIdentity: sidecar, postgres: {dsnFile: "`+dsn+`", schema: e2e_pg}}`), db
}

// TestPostgresReplicas: two sidecar processes of the real binary share
// one store/postgres store. The same write retried through the other
// replica is the replay of the first receipt (applied once); after A's
// lease was released and B wrote through sidecar 2, A's late segment
// through sidecar 1, its HELD proof still fresh, is STALE_OWNER and the
// backend keeps B's value.
func TestPostgresReplicas(t *testing.T) {
	rs, db := startPostgresReplicas(t, 2, "proof")
	a := rs.acquire(t, "worker-a", "1", 10*time.Second, 0)
	st, code, h1 := rs.put(t, 0, "worker-a", a, "1", "1", "A1")
	if st != 200 {
		t.Fatalf("A's segment 1 through sidecar 1: %d %s", st, code)
	}
	st, code, h2 := rs.put(t, 1, "worker-a", a, "1", "1", "A1")
	if st != 200 || h2.Get(fencegate.HeaderReplayed) != "true" || h2.Get(fencegate.HeaderReceipt) != h1.Get(fencegate.HeaderReceipt) {
		t.Fatalf("the retry through sidecar 2: %d %s replayed=%q receipt %q vs %q", st, code, h2.Get(fencegate.HeaderReplayed), h2.Get(fencegate.HeaderReceipt), h1.Get(fencegate.HeaderReceipt))
	}
	if v, writes := rs.back.get(); v != "A1" || writes != 1 {
		t.Fatalf("backend: %q after %d writes, want A1 once", v, writes)
	}
	ca, _ := client.New(rs.reg.url, client.WithIdentityHeader("X-Fencegate-Identity", "worker-a"))
	if _, err := ca.Release(context.Background(), a.Lease); err != nil {
		t.Fatal(err)
	}
	b := rs.acquire(t, "worker-b", "1", 10*time.Second, 5*time.Second)
	if st, code, _ := rs.put(t, 1, "worker-b", b, "1", "1", "B1"); st != 200 {
		t.Fatalf("B's write through sidecar 2: %d %s", st, code)
	}
	if st, code, _ := rs.put(t, 0, "worker-a", a, "1", "2", "A2"); st != 409 || code != fencegate.CodeStaleOwner {
		t.Fatalf("A's late segment 2 through sidecar 1: %d %s, want 409 STALE_OWNER", st, code)
	}
	if v, _ := rs.back.get(); v != "B1" {
		t.Fatalf("backend holds %q, want B1", v)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var receipts int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM e2e_pg.receipts WHERE resource = 'account/1'`).Scan(&receipts); err != nil || receipts != 2 {
		t.Fatalf("receipts of account/1 in the database: %d %v, want A1's and B1's", receipts, err)
	}
}
