package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redistest"
)

// stack is every server process of a bench run.
type stack struct {
	ck    clock.Clock
	dir   string // scratch directory, removed at the end
	root  string // module root
	bin   string // the fencegate binary
	self  string // this program, for its subcommands
	procs *children

	backend    *child
	backendURL string
	plain      *child
	plainURL   string
	redis      *child
	redisAddr  string
	// etcd is the one-member etcd cluster of the etcd registry (etcd.go).
	etcd       *child
	etcdURL    string
	registries map[string]*registryProc

	// pg is the run's own PostgreSQL database (pgdb.go), nil until
	// created; pgSkip, when set, is why it could not be.
	pg     *benchDatabase
	pgSkip string
	// pgStat is the connection the postgres arms' CPU readings list the
	// database's backends on (pgcpu.go), nil until first used.
	pgStat *pgx.Conn
	// skipped are the arms selected but not measured, with why.
	skipped []skippedArm
}

// registryProc is a running "fencegate registry".
type registryProc struct {
	name    string // EdDSA, ES256, HS256 (bolt backends), memory, redis, etcd (EdDSA)
	backend string
	alg     string
	keys    string // directory with signing.jwk and jwks.json
	url     string
	proc    *child
}

var (
	reServerListening   = regexp.MustCompile(`listening on (\S+)`)
	reRegistryListening = regexp.MustCompile(`registry listening on (\S+)`)
	reSidecarListening  = regexp.MustCompile(`listening on (\S+) \(admin (\S+)\)`)
)

// buildFencegate builds cmd/fencegate into dir once.
func buildFencegate(root, dir string) (string, error) {
	bin := filepath.Join(dir, "fencegate")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/fencegate")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as the image's (Dockerfile)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: building fencegate: %w: %s", err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of the fencegate go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("bench: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("bench: run from inside the fencegate module")
	}
	return filepath.Dir(gomod), nil
}

// startBackend runs "bench backend".
func (s *stack) startBackend() error {
	c, m, err := s.procs.start("backend", reServerListening, s.dir, s.self, "backend")
	if err != nil {
		return err
	}
	s.backend, s.backendURL = c, "http://"+m[1]
	return nil
}

// startPlainProxy runs "bench plainproxy" in front of the backend.
func (s *stack) startPlainProxy() error {
	c, m, err := s.procs.start("plainproxy", reServerListening, s.dir, s.self, "plainproxy", "-backend", s.backendURL)
	if err != nil {
		return err
	}
	s.plain, s.plainURL = c, "http://"+m[1]
	return nil
}

// startRedis runs a private redis-server, durable as the fencegate docs
// require of a store or registry backend (appendonly yes, appendfsync
// always). Redis cannot bind port 0: a port is picked free just before,
// and another is tried if someone took it in between.
func (s *stack) startRedis() error {
	bin, err := redistest.Binary()
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "redis")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return err
		}
		c, _, err := s.procs.start("redis-server", nil, dir, bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
			"--appendfsync", "always", "--dir", dir, "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
		if err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if last = s.waitRedis(c, addr); last == nil {
			s.redis, s.redisAddr = c, addr
			return nil
		}
	}
	return last
}

func (s *stack) waitRedis(c *child, addr string) error {
	deadline := s.ck.Now().Add(10 * time.Second)
	for s.ck.Now().Before(deadline) {
		if redistest.Ping(addr) == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%w: redis-server on %s exited", errChild, addr)
		case <-s.ck.NewTimer(20 * time.Millisecond).C():
		}
	}
	return fmt.Errorf("%w: redis-server on %s: no PONG in 10s", errChild, addr)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// generateKeys runs "fencegate keys generate" for alg, once per alg.
func (s *stack) generateKeys(alg string) (string, error) {
	dir := filepath.Join(s.dir, "keys-"+alg)
	if _, err := os.Stat(filepath.Join(dir, "signing.jwk")); err == nil {
		return dir, nil
	}
	out, err := exec.Command(s.bin, "keys", "generate", "--alg", alg, "--out", dir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bench: keys generate %s: %w: %s", alg, err, out)
	}
	return dir, nil
}

// registryYAML is the configuration of a registry on backend signing with
// the key in keysDir; server is the Redis address or the etcd member's
// client URL. Identity is insecure-header (--insecure-dev): the bench
// measures the lease protocol, not TLS.
func registryYAML(dataDir, backend, server, prefix, keysDir string) string {
	y := "listen: 127.0.0.1:0\n" +
		"dataDir: " + strconv.Quote(dataDir) + "\n" +
		"backend: " + backend + "\n" +
		"signingKey: " + strconv.Quote(filepath.Join(keysDir, "signing.jwk")) + "\n" +
		"log: {level: warn}\n" +
		// The profile phase (profile.go) reads /debug/pprof, an admin route.
		"admin: {allowLoopback: true}\n"
	switch backend {
	case "redis":
		y += "redis: {addr: " + strconv.Quote(server) + ", prefix: " + prefix + "}\n"
	case "etcd":
		y += "etcd: {endpoints: [" + strconv.Quote(server) + "], prefix: " + prefix + "}\n"
	}
	return y
}

// startRegistry runs a registry named name on backend, signing with alg.
func (s *stack) startRegistry(name, backend, alg string) (*registryProc, error) {
	keysDir, err := s.generateKeys(alg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.dir, "registry-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "registry.yaml")
	server := s.redisAddr
	if backend == "etcd" {
		server = s.etcdURL
	}
	y := registryYAML(filepath.Join(dir, "data"), backend, server, "fgreg-"+name, keysDir)
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		return nil, err
	}
	c, m, err := s.procs.start("registry-"+name, reRegistryListening, dir, s.bin, "registry", "--config", cfg, "--insecure-dev")
	if err != nil {
		return nil, err
	}
	r := &registryProc{name: name, backend: backend, alg: alg, keys: keysDir, url: "http://" + m[1], proc: c}
	s.registries[name] = r
	return r, nil
}

// sidecarSpec shapes one "fencegate proxy".
type sidecarSpec struct {
	name   string // also its service name and resource prefix
	store  string // memory, bolt, redis, postgres
	status string // registry, proof
	reg    *registryProc
	// pgDSNFile is the postgres store's store.postgres.dsnFile.
	pgDSNFile string
}

// pgSchema is a postgres arm's store.postgres.schema: its name in lower
// case with '_' for '-', so that the arms share the run's database, each
// in a schema of its own.
func pgSchema(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "-", "_"))
}

// itemsPath is the protected route; the resource is bench/{id}.
const itemsPath = "/v1/items/"

// proofMaxAge is the proof-mode routes' status.maxAge, and what the
// workers' Transports assume (the SDK default).
const proofMaxAge = 5 * time.Second

// sidecarYAML is the configuration of a sidecar in enforce mode.
func sidecarYAML(sp sidecarSpec, backendURL, redisAddr, dataDir string) string {
	var store string
	switch sp.store {
	case "bolt":
		store = "{backend: bolt, service: " + sp.name + ", claimIdentity: " + sp.name + "}"
	case "redis":
		store = "{backend: redis, service: " + sp.name + ", claimIdentity: " + sp.name + ", redis: {addr: " + strconv.Quote(redisAddr) + ", prefix: " + sp.name + "}}"
	case "postgres":
		store = "{backend: postgres, service: " + sp.name + ", claimIdentity: " + sp.name + ", postgres: {dsnFile: " + strconv.Quote(sp.pgDSNFile) + ", schema: " + pgSchema(sp.name) + "}}"
	default:
		store = "{backend: memory}"
	}
	return "listen: 127.0.0.1:0\n" +
		"admin: {listen: 127.0.0.1:0}\n" +
		"backend: {url: " + strconv.Quote(backendURL) + ", maxIdleConnsPerHost: 256}\n" +
		"routes:\n" +
		"  - {method: PUT, path: \"" + itemsPath + "{id}\", resource: \"bench/{id}\", mode: enforce, status: {mode: " + sp.status + ", maxAge: " + proofMaxAge.String() + "}}\n" +
		"identity: {mode: insecure-header}\n" +
		"trust: {bundle: " + strconv.Quote(filepath.Join(sp.reg.keys, "jwks.json")) + ", allowHS256: " + strconv.FormatBool(sp.reg.alg == "HS256") + "}\n" +
		"registry: {url: " + strconv.Quote(sp.reg.url) + "}\n" +
		"store: " + store + "\n" +
		"dataDir: " + strconv.Quote(dataDir) + "\n" +
		"log: {level: warn}\n"
}

// startSidecar runs "fencegate proxy" for sp in front of the backend and
// returns it with its URL and its admin API's URL.
func (s *stack) startSidecar(sp sidecarSpec) (*child, string, string, error) {
	dir := filepath.Join(s.dir, "sidecar-"+sp.name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, "", "", err
	}
	cfg := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(cfg, []byte(sidecarYAML(sp, s.backendURL, s.redisAddr, filepath.Join(dir, "data"))), 0o600); err != nil {
		return nil, "", "", err
	}
	c, m, err := s.procs.start("sidecar-"+sp.name, reSidecarListening, dir, s.bin, "proxy", "--config", cfg)
	if err != nil {
		return nil, "", "", err
	}
	return c, "http://" + m[1], "http://" + m[2], nil
}

// waitingAcquires reads fencegate_registry_waiting_acquires from a
// registry's /metrics.
func waitingAcquires(ctx context.Context, hc *http.Client, regURL string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, regURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "fencegate_registry_waiting_acquires "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("bench: metrics: %w", err)
			}
			return int(f), nil
		}
	}
	return 0, fmt.Errorf("bench: no fencegate_registry_waiting_acquires in %s/metrics", regURL)
}
