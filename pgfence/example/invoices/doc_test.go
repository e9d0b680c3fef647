package invoices_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"go.uber.org/goleak"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/pgfence/example/invoices"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGuideShowsThisExample: docs/sdk.md's library-mode block is this
// package's source, byte for byte, so the guide's example is the one that
// compiles and runs here.
func TestGuideShowsThisExample(t *testing.T) {
	src, err := os.ReadFile("invoices.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../docs/sdk.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- pgfence/example/invoices/invoices.go -->\n```go\n")
	block, _, closed := strings.Cut(after, "```\n")
	if !ok || !closed {
		t.Fatal("docs/sdk.md has no block after <!-- pgfence/example/invoices/invoices.go -->")
	}
	if block != string(src) {
		t.Fatalf("docs/sdk.md's library-mode example differs from pgfence/example/invoices/invoices.go; copy the file into the guide")
	}
}

// TestExampleRuns runs the guide's example against the real PostgreSQL:
// the owner's write lands and its retry is answered from the receipt
// (also after the next owner wrote: it is not applied again), and an
// older fence's write is refused STALE_OWNER and changes nothing.
func TestExampleRuns(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE invoices (batch text PRIMARY KEY, total bigint NOT NULL);
		INSERT INTO invoices VALUES ('7', 0)`); err != nil {
		t.Fatal(err)
	}
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	fence, err := invoices.Open(ctx, pool, verifytest.BundleFile(t, is))
	if err != nil {
		t.Fatal(err)
	}
	lease := func(n uint64) (grant, proof string) {
		is.Now = clock.Real().Now()
		g := is.Grant(func(g *fencegate.Grant) {
			g.Resource, g.FenceToken, g.OperationRoot = "invoice-batch/7", n, "root-"+string(rune('a'+n))
		})
		tok := is.Sign(g)
		return string(tok), string(is.SignStatus(is.StatusFor(tok, g, is.Now)))
	}
	total := func() (v int64) {
		if err := pool.QueryRow(ctx, `SELECT total FROM invoices WHERE batch = '7'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	caller := verifytest.DefaultOwner
	g5, p5 := lease(5)
	if err := invoices.SetTotal(ctx, pool, fence, caller, g5, p5, "7", 100); err != nil {
		t.Fatal(err)
	}
	if err := invoices.SetTotal(ctx, pool, fence, caller, g5, p5, "7", 100); err != nil {
		t.Fatalf("the retry: %v, want nil (answered from the receipt)", err)
	}
	g6, p6 := lease(6)
	if err := invoices.SetTotal(ctx, pool, fence, caller, g6, p6, "7", 200); err != nil {
		t.Fatal(err)
	}
	if err := invoices.SetTotal(ctx, pool, fence, caller, g5, p5, "7", 100); err != nil {
		t.Fatalf("the first owner's retry after the hand-off: %v, want nil (answered from its receipt, not applied again)", err)
	}
	g4, p4 := lease(4)
	err = invoices.SetTotal(ctx, pool, fence, caller, g4, p4, "7", 999)
	if p, ok := err.(*fencegate.Problem); !ok || p.Code != fencegate.CodeStaleOwner {
		t.Fatalf("the stale owner: %v, want STALE_OWNER", err)
	}
	if v := total(); v != 200 {
		t.Fatalf("total %d, want 200", v)
	}
}
