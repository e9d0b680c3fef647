package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store/postgres"
)

// libraryService is a Go service in library mode: PUT /v1/accounts/{id}
// appends the body to the account's writes inside the fence's
// transaction (pgfence.Handler over its own PostgreSQL database), with
// the registry's keys as its trust bundle. It takes the sidecar's place
// in front of the workers.
type libraryService struct {
	url  string
	pool *pgxpool.Pool
}

func startLibraryService(t *testing.T, reg *registry, status string) *libraryService {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE writes (n bigserial PRIMARY KEY, account text NOT NULL, body text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(ctx, pool, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		t.Fatal(err)
	}
	opts := []pgfence.Option{pgfence.WithTrustBundle(filepath.Join(reg.dataDir, "keys", "jwks.json")), pgfence.WithIdentity(ident)}
	if status == "registry" {
		opts = append(opts, pgfence.WithRegistryStatus(registryClient(t, reg.url, "library-service"), 0))
	} else {
		opts = append(opts, pgfence.WithProofStatus(10*time.Second))
	}
	f, err := pgfence.New(ctx, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	resourceOf := func(r *http.Request) (string, error) {
		id, ok := strings.CutPrefix(r.URL.Path, "/v1/accounts/")
		if !ok || id == "" || r.Method != http.MethodPut {
			return "", fmt.Errorf("not an account write: %s %s", r.Method, r.URL.Path)
		}
		return "account/" + id, nil
	}
	h := f.Handler(pool, pgx.TxOptions{}, resourceOf, func(w http.ResponseWriter, r *http.Request, tx pgx.Tx) error {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(r.Context(), `INSERT INTO writes (account, body) VALUES ($1, $2)`, r.URL.Path, string(body)); err != nil {
			return err
		}
		_, err = io.WriteString(w, "ok")
		return err
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &libraryService{url: srv.URL, pool: pool}
}

// wantBodies fails unless the writes of path are bodies, in order.
func (s *libraryService) wantBodies(t *testing.T, path string, bodies ...string) {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT body FROM writes WHERE account = $1 ORDER BY n`, path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(bodies, ",") {
		t.Fatalf("writes of %s: %q, want %q", path, got, bodies)
	}
}

// TestLibraryModePausedWorker is TestPausedWorker with the sidecar
// replaced by a Go service in library mode: a real registry, worker A a
// real process holding a 1 s lease, frozen with SIGSTOP past its TTL
// while B takes over. A's stale segment 2 is refused by status before B
// wrote (registry mode: GRANT_NOT_HELD; proof mode: STATUS_STALE) and
// STALE_OWNER after; the service's table holds A's segment 1 then B's
// write, nothing else.
func TestLibraryModePausedWorker(t *testing.T) {
	for _, mode := range []string{"registry", "proof"} {
		t.Run(mode, func(t *testing.T) {
			reg := startRegistry(t, "")
			svc := startLibraryService(t, reg, mode)
			id := "library-" + mode
			a := startWorker(t, reg.url, svc.url, "worker-a", id, time.Second)
			if st, code := a.send("1", "A1"); st != 200 {
				t.Fatalf("A's segment 1: %d %s", st, code)
			}
			a.signal(syscall.SIGSTOP)
			b := acquireAt(t, reg.url, "worker-b", id, 30*time.Second, 10*time.Second)
			a.signal(syscall.SIGCONT)

			before := fencegate.CodeGrantNotHeld
			if mode == "proof" {
				before = fencegate.CodeStatusStale
			}
			if st, code := a.send("2", "A2"); st != before.Status() || code != before {
				t.Fatalf("A's stale segment 2 before B wrote: %d %s, want %d %s", st, code, before.Status(), before)
			}
			wantAccepted(t, "B's write", send(svc.url, of("worker-b", b, accountsPath(id), "1", "B1")))
			if replayed := wantAccepted(t, "B's write again", send(svc.url, of("worker-b", b, accountsPath(id), "1", "B1"))); !replayed {
				t.Fatal("B's write sent again was not answered from its receipt")
			}
			if st, code := a.send("2", "A2"); st != 409 || code != fencegate.CodeStaleOwner {
				t.Fatalf("A's stale segment 2 after B wrote: %d %s, want 409 STALE_OWNER", st, code)
			}
			svc.wantBodies(t, accountsPath(id), "A1", "B1")
		})
	}
}
