package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/fencegate/fencegate/internal/confcheck"
	storepg "github.com/fencegate/fencegate/store/postgres"
	"github.com/fencegate/fencegate/tlsfiles"
)

// PostgresStoreConfig is the PostgreSQL database of the postgres store
// backend (store/postgres), shared by every replica of the service.
type PostgresStoreConfig struct {
	// DSNFile is the file holding the connection string (a URL or libpq
	// key=value pairs, its password included): required, and a DSN in the
	// configuration itself is refused, as a Redis password is.
	DSNFile string `yaml:"dsnFile"`
	// DSN is refused (Validate says to use dsnFile); it exists so that the
	// key is reported instead of being an unknown one.
	DSN string `yaml:"dsn"`
	// Schema is the PostgreSQL schema of the store's tables (default
	// fencegate): several services can share a database, each in its own.
	Schema string `yaml:"schema"`
	// TLS, when enabled, connects with sslmode verify-full to every host of
	// the DSN, no plaintext fallback: the server's certificate verified
	// against caFile (default: the system roots) and its name against the
	// host's (or serverName), with an optional client certificate; the
	// files are re-read when they rotate. Without it the DSN's own sslmode
	// applies.
	TLS tlsfiles.ClientConfig `yaml:"tls"`
	// MaxConns and MinConns bound the connection pool (default:
	// postgres.DefaultMaxConns, 16, and 0).
	MaxConns int32 `yaml:"maxConns"`
	MinConns int32 `yaml:"minConns"`
	// ConnectTimeout bounds a connection's dial and handshake (default
	// 5s); StatementTimeout is the server's statement_timeout for the
	// store's sessions (default 5s): a database that stops answering fails
	// a write (STORE_UNAVAILABLE) instead of holding it.
	ConnectTimeout   time.Duration `yaml:"connectTimeout"`
	StatementTimeout time.Duration `yaml:"statementTimeout"`
	// AllowNonDurable starts even when the store's sessions run with
	// fsync off or synchronous_commit off or local (refused otherwise:
	// the server can lose a write it acknowledged, and a highest fence
	// with it), logging a warning: a scratch database in development.
	AllowNonDurable bool `yaml:"allowNonDurable"`
}

// The postgres section's defaults.
const (
	defaultPostgresConnectTimeout   = 5 * time.Second
	defaultPostgresStatementTimeout = 5 * time.Second
	// postgresOpenTimeout bounds Open at start (connect, migrate).
	postgresOpenTimeout = 30 * time.Second
	// maxPostgresSchemaLen is PostgreSQL's identifier limit (NAMEDATALEN-1).
	maxPostgresSchemaLen = 63
)

// validate reports every problem of the section at once (it reads no
// file; the DSN's shape is checked when it is read, at start).
func (c PostgresStoreConfig) validate(section string) []error {
	var p confcheck.Problems
	if c.DSN != "" {
		p.Add("%s.dsn: a DSN written into the configuration is refused (it carries the password); put it in a file (a mounted Secret) and name it in %s.dsnFile", section, section)
	}
	if c.DSNFile == "" {
		p.Add("%s.dsnFile: required (a file holding the connection string)", section)
	}
	if !validSchema(c.Schema) {
		p.Add("%s.schema: %q must be 1 to %d bytes of [a-z0-9_], not starting with a digit or pg_", section, c.Schema, maxPostgresSchemaLen)
	}
	if c.MaxConns < 0 || c.MinConns < 0 {
		p.Add("%s: maxConns and minConns must not be negative", section)
	}
	if c.MaxConns > 0 && c.MinConns > c.MaxConns {
		p.Add("%s.minConns: %d is above maxConns %d", section, c.MinConns, c.MaxConns)
	}
	if c.ConnectTimeout < 0 || c.StatementTimeout < 0 {
		p.Add("%s: connectTimeout and statementTimeout must not be negative (0 is the default)", section)
	}
	p.Append(c.TLS.Validate(section + ".tls")...)
	return p
}

// validSchema reports whether s is a schema name validate accepts ("" is
// the default): lower-case, so that it needs no quoting to be found.
func validSchema(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > maxPostgresSchemaLen || s[0] >= '0' && s[0] <= '9' || strings.HasPrefix(s, "pg_") {
		return false
	}
	for i := range len(s) {
		if b := s[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

// readDSN returns the DSN in DSNFile without its trailing newlines.
func (c PostgresStoreConfig) readDSN(section string) (string, error) {
	b, err := os.ReadFile(c.DSNFile)
	if err != nil {
		return "", fmt.Errorf("%s.dsnFile: %w", section, err)
	}
	dsn := strings.TrimRight(string(b), "\r\n")
	if dsn == "" {
		return "", fmt.Errorf("%s.dsnFile: %s is empty", section, c.DSNFile)
	}
	return dsn, nil
}

// storeOptions builds the store's options: the DSN read from its file, the
// TLS configuration (re-read when the files rotate), the pool limits and
// timeouts with their defaults.
func (c PostgresStoreConfig) storeOptions(maxBody int, log *zap.Logger) (storepg.Options, error) {
	const section = "store.postgres"
	dsn, err := c.readDSN(section)
	if err != nil {
		return storepg.Options{}, err
	}
	parsed, err := pgconn.ParseConfig(dsn)
	if err != nil {
		// Its error may quote the DSN, password included.
		return storepg.Options{}, fmt.Errorf("%s.dsnFile: %s does not hold a DSN that parses", section, c.DSNFile)
	}
	opts := storepg.Options{
		DSN:              dsn,
		Schema:           c.Schema,
		MaxResponseBody:  maxBody,
		MaxConns:         c.MaxConns,
		MinConns:         c.MinConns,
		ConnectTimeout:   orDefault(c.ConnectTimeout, defaultPostgresConnectTimeout),
		StatementTimeout: orDefault(c.StatementTimeout, defaultPostgresStatementTimeout),
		AllowNonDurable:  c.AllowNonDurable,
		Logger:           slog.New(zapslog.NewHandler(log.Core())),
	}
	if opts.TLS, opts.HostTLS, err = c.hostTLS(parsed, log); err != nil {
		return storepg.Options{}, fmt.Errorf("%s.tls: %w", section, err)
	}
	return opts, nil
}

// hostTLS builds the TLS configuration of the DSN's first host and of each
// of its hosts (re-read when the files rotate), each verifying the host's
// own name unless serverName is set; nil when TLS is not enabled.
func (c PostgresStoreConfig) hostTLS(parsed *pgconn.Config, log *zap.Logger) (*tls.Config, map[string]*tls.Config, error) {
	if !c.TLS.Enabled {
		return nil, nil, nil
	}
	reload := tlsfiles.Reload{OnError: func(err error) {
		log.Warn("store.postgres.tls: rotated files not loaded", zap.Error(err))
	}}
	hosts := map[string]*tls.Config{}
	names := []string{parsed.Host}
	for _, f := range parsed.Fallbacks {
		names = append(names, f.Host)
	}
	for _, h := range names {
		if hosts[h] != nil {
			continue
		}
		tc, err := c.TLS.Reloading(h, reload)
		if err != nil {
			return nil, nil, err
		}
		hosts[h] = tc
	}
	return hosts[parsed.Host], hosts, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// openPostgresStore connects to the postgres store's database, applies
// its migrations and checks it answers. The generation it must keep
// seeing is set by the anchor.
func openPostgresStore(c PostgresStoreConfig, maxBody int, log *zap.Logger) (*storepg.Store, error) {
	opts, err := c.storeOptions(maxBody, log)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), postgresOpenTimeout)
	defer cancel()
	st, err := storepg.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	return st, nil
}
