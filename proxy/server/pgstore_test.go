package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
	"github.com/fencegate/fencegate/tlsfiles"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// dsnFile writes dsn into a file, as a mounted Secret holds it.
func dsnFile(t *testing.T, dsn string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(p, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A sidecar does not start on a PostgreSQL store whose sessions run with
// synchronous_commit off (here set for its database) unless
// store.postgres.allowNonDurable says so.
func TestPostgresStoreNonDurableRefusedUnlessAllowed(t *testing.T) {
	dsn := pgtest.Database(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(context.Background(), pgtest.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.Exec(context.Background(), "ALTER DATABASE "+cfg.Database+" SET synchronous_commit = off")
	_ = admin.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pc := PostgresStoreConfig{DSNFile: dsnFile(t, dsn)}
	st, err := openPostgresStore(pc, 1<<16, zap.NewNop())
	if err == nil {
		_ = st.Close()
		t.Fatal("opened a postgres store whose sessions run with synchronous_commit off")
	}
	if !strings.Contains(err.Error(), "synchronous_commit is off") || !strings.Contains(err.Error(), "allowNonDurable") {
		t.Fatalf("refusal %q does not name the setting and the key that allows it", err)
	}
	pc.AllowNonDurable = true
	st, err = openPostgresStore(pc, 1<<16, zap.NewNop())
	if err != nil {
		t.Fatalf("store.postgres.allowNonDurable: %v", err)
	}
	_ = st.Close()
}

// Two sidecars configured with store.backend postgres and the same
// database share one fenced store: a fence one of them accepted makes the
// other's older fence STALE_OWNER, and its mutation in flight makes a
// concurrent attempt BUSY.
func TestPostgresStoreIsSharedBetweenSidecars(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = StoreConfig{Backend: "postgres", Service: "svc", Postgres: PostgresStoreConfig{DSNFile: dsnFile(t, pgtest.Database(t)), Schema: "svc", MaxConns: 4}}
	cfg.Registry.URL = "http://127.0.0.1:1" // not called: the stores are opened bare
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	open := func() store.Store {
		st, err := openStore(cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a, b := open(), open()
	ctx := context.Background()
	now := time.Now()
	at := func(in store.BeginInput) store.BeginInput {
		in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
		return in
	}
	if res, err := a.Begin(ctx, at(storetest.Attempt("item/1", 2, 1, "p"))); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("sidecar a: %s %v", res.Decision, err)
	}
	if res, err := b.Begin(ctx, at(storetest.Attempt("item/1", 2, 1, "q"))); err != nil || res.Decision != store.DecisionBusy {
		t.Fatalf("sidecar b, same segment while a's is in flight: %s %v; want BUSY", res.Decision, err)
	}
	if res, err := b.Begin(ctx, at(storetest.Attempt("item/1", 1, 1, "p"))); err != nil || res.Decision != store.DecisionStaleOwner {
		t.Fatalf("sidecar b, older fence: %s %v; want STALE_OWNER", res.Decision, err)
	}
}

// A sidecar whose postgres store does not answer does not start, and its
// error names the store without printing the DSN's password.
func TestPostgresStoreUnreachableFailsStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = StoreConfig{Backend: "postgres", Postgres: PostgresStoreConfig{
		DSNFile: dsnFile(t, "postgres://fg:hunter2@"+addr+"/db?sslmode=disable"), ConnectTimeout: 2 * time.Second}}
	st, err := openStore(cfg, zap.NewNop())
	if err == nil {
		st.Close()
		t.Fatal("opened a postgres store with no server")
	}
	if !strings.Contains(err.Error(), "store/postgres") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v: want one naming the postgres store, without the password", err)
	}
	cfg.Store.Postgres.DSNFile = dsnFile(t, "postgres://fg:hunter2@[::1/db")
	if _, err := openStore(cfg, zap.NewNop()); err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "store.postgres.dsnFile") {
		t.Fatalf("a DSN that does not parse: %v", err)
	}
}

// pgSidecar is a real sidecar on the postgres store (schema and service
// named alike), anchored at a real registry, in front of a backend that
// counts what it is forwarded; put sends a worker's write of segment seq
// of item/1, whose lock the worker holds.
type pgSidecar struct {
	s         *Server
	dsn       string
	forwarded *atomic.Int64
	put       func(seq uint64) error
}

func startPostgresSidecar(t *testing.T, schema string) pgSidecar {
	t.Helper()
	sc := pgSidecar{forwarded: new(atomic.Int64)}
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		sc.forwarded.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(back.Close)
	sc.dsn = pgtest.Database(t)
	regURL, bundle := startRegistry(t)
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: back.URL, Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regURL},
		Store:    StoreConfig{Backend: "postgres", Service: schema, Identity: "sidecar", Postgres: PostgresStoreConfig{DSNFile: dsnFile(t, sc.dsn), Schema: schema}},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  t.TempDir(),
	}
	sc.s = serveUntilDone(t, cfg)
	waitReady(t, sc.s.AdminAddr(), true)
	ctx := context.Background()
	worker, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := worker.Hold(ctx, "item/1", client.WithTTL(time.Minute), client.WithoutBackground())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	sc.put = func(seq uint64) error {
		req, _ := http.NewRequestWithContext(client.ContextWithSegment(ctx, seq), http.MethodPut, "http://"+sc.s.Addr()+"/v1/items/1", strings.NewReader("x"))
		req.Header.Set(identity.DefaultHeader, "worker")
		resp, err := h.Transport().Client().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return client.ResponseError(resp)
	}
	return sc
}

// TestPostgresSidecarAcceptsAndRefusesWrites runs a real sidecar on the
// postgres store, anchored at a real registry: a worker's write is
// accepted and forwarded, its receipt is in the database; once the
// database loses its data (the store's tables emptied behind the
// sidecar's back, as a replaced database would be) the sidecar is not
// ready, and the next write is refused with STORE_UNAVAILABLE and never
// forwarded.
func TestPostgresSidecarAcceptsAndRefusesWrites(t *testing.T) {
	sc := startPostgresSidecar(t, "pgsvc")
	s, dsn, forwarded, put := sc.s, sc.dsn, sc.forwarded, sc.put
	ctx := context.Background()
	if err := put(1); err != nil || forwarded.Load() != 1 {
		t.Fatalf("a write on the postgres store: %v, forwarded %d", err, forwarded.Load())
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var receipts int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pgsvc.receipts WHERE resource = 'item/1'`).Scan(&receipts); err != nil || receipts != 1 {
		t.Fatalf("receipts of item/1 in the database: %d %v", receipts, err)
	}
	if _, err := conn.Exec(ctx, `TRUNCATE pgsvc.meta, pgsvc.records, pgsvc.receipts, pgsvc.counts`); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.AdminAddr(), false)
	if err := put(2); !errors.Is(err, fencegate.CodeStoreUnavailable) {
		t.Fatalf("a write after the database lost its data: %v, want STORE_UNAVAILABLE", err)
	}
	if n := forwarded.Load(); n != 1 {
		t.Fatalf("the backend saw %d writes, want only the one before the loss", n)
	}
	waitFor(t, "the sidecar reports the store lost", func() bool {
		resp, err := http.Get("http://" + s.AdminAddr() + "/v1/store")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"lost": true`)
	})
}

// TestPostgresStoreOverTLS: a private cluster that requires TLS on
// loopback and a client certificate. With store.postgres.tls (the CA
// file, the client certificate) the sidecar's store opens and decides;
// without a client certificate, with another CA (the server not
// verified: verify-full), or with a server certificate for another name,
// it does not start; without tls the DSN's plaintext is refused.
func TestPostgresStoreOverTLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "pg-ca")
	cl := pgtest.StartCluster(t)
	srv := ca.Server(t, "127.0.0.1")
	cl.EnableTLS(srv.CertPEM, srv.KeyPEM, ca.PEM)
	dir := t.TempDir()
	files := tlsfilestest.WriteFiles(t, dir, ca.Client(t, "spiffe://test/sidecar"), ca.PEM)
	otherCA := tlsfilestest.WriteFiles(t, t.TempDir(), tlsfilestest.Leaf{}, tlsfilestest.NewCA(t, "other").PEM)
	cfg := testConfig(t, "http://127.0.0.1:1")
	open := func(pc PostgresStoreConfig) (store.Store, error) {
		pc.DSNFile = dsnFile(t, cl.DSN("postgres"))
		pc.ConnectTimeout = 5 * time.Second
		cfg.Store = StoreConfig{Backend: "postgres", Postgres: pc}
		st, err := openStore(cfg, zap.NewNop())
		if err == nil {
			t.Cleanup(func() { _ = st.Close() })
		}
		return st, err
	}
	st, err := open(PostgresStoreConfig{TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: files.CA, CertFile: files.Cert, KeyFile: files.Key}})
	if err != nil {
		t.Fatalf("over TLS with a client certificate: %v", err)
	}
	now := time.Now()
	in := storetest.Attempt("item/1", 1, 1, "p")
	in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
	if res, err := st.Begin(context.Background(), in); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin over TLS: %s %v", res.Decision, err)
	}
	for _, c := range []struct {
		name string
		pc   PostgresStoreConfig
		want string
	}{
		{"no client certificate", PostgresStoreConfig{TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: files.CA}}, "requires a valid client certificate"},
		{"another CA", PostgresStoreConfig{TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: otherCA.CA, CertFile: files.Cert, KeyFile: files.Key}}, "unknown authority"},
		{"another server name", PostgresStoreConfig{TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: files.CA, CertFile: files.Cert, KeyFile: files.Key, ServerName: "db.elsewhere"}}, "not valid for"},
		{"no tls", PostgresStoreConfig{}, "no encryption"},
	} {
		if _, err := open(c.pc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}

	// A DSN of two hosts, the first one down: the store reaches the
	// second over TLS, verified against its own name (127.0.0.1, not the
	// first host's localhost).
	pcfg, err := pgx.ParseConfig(cl.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	twoHosts := "postgres://postgres@localhost:" + strconv.Itoa(down) + ",127.0.0.1:" + strconv.Itoa(int(pcfg.Port)) + "/postgres?sslmode=prefer"
	pc := PostgresStoreConfig{DSNFile: dsnFile(t, twoHosts), ConnectTimeout: 5 * time.Second,
		TLS: tlsfiles.ClientConfig{Enabled: true, CAFile: files.CA, CertFile: files.Cert, KeyFile: files.Key}}
	cfg.Store = StoreConfig{Backend: "postgres", Postgres: pc}
	st2, err := openStore(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("two hosts, the first down, over TLS: %v", err)
	}
	defer st2.Close()
	if res, err := st2.Begin(context.Background(), storetest.Attempt("item/2", 1, 1, "p")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin on the second host: %s %v", res.Decision, err)
	}
}
