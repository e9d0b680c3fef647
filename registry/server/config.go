package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Config is the registry's YAML configuration. Zero values take the
// defaults of Default().
type Config struct {
	// Listen is the API address (host:port). Default 127.0.0.1:8700; its
	// host is FENCEGATE_LISTEN_HOST when that is set (the container image
	// sets 0.0.0.0). An explicit value always wins.
	Listen string `yaml:"listen"`
	// DataDir holds the bbolt file and generated keys.
	DataDir string `yaml:"dataDir"`
	// Backend is bolt (default, durable), redis (shared, durable when the
	// server runs with appendonly yes and appendfsync always), etcd
	// (shared, replicated by Raft) or memory (tests only).
	Backend string `yaml:"backend"`
	// Redis is the redis backend's connection.
	Redis RedisConfig `yaml:"redis"`
	// Etcd is the etcd backend's cluster.
	Etcd   EtcdConfig `yaml:"etcd"`
	Issuer string     `yaml:"issuer"`
	// SigningKey is a private JWK file; empty generates an EdDSA key in
	// DataDir/keys on first start and reuses it after.
	SigningKey string `yaml:"signingKey"`
	// PublishKeys are more key files (JWK or JWK set) whose public halves are
	// published in /.well-known/jwks.json: the old key during a rotation.
	PublishKeys []string `yaml:"publishKeys"`
	// FenceFloor, when set, raises the global fence floor to at least this
	// value at every start, before the registry serves: every fence issued
	// from then on exceeds it. It never lowers the floor, so it may stay in
	// the configuration. Use it when a registry replaces, migrates or
	// rolls back another: the floor is the highest fence the sidecars
	// accepted (fencegate fences collect). The flag --fence-floor
	// overrides it.
	FenceFloor uint64 `yaml:"fenceFloor"`
	// MinIssuerEpoch, when set, raises the issuer epoch to at least this
	// value at every start, before the registry serves (never lowers it;
	// raising it revokes every grant of an older epoch). A replacing
	// registry starts above the highest epoch the sidecars accept
	// (fencegate fences collect prints it), or its grants are
	// EPOCH_REVOKED. The flag --issuer-epoch overrides it.
	MinIssuerEpoch uint64          `yaml:"minIssuerEpoch"`
	TLS            tlsfiles.Server `yaml:"tls"`
	Identity       identity.Config `yaml:"identity"`
	Leases         LeaseConfig     `yaml:"leases"`
	Proofs         ProofConfig     `yaml:"proofs"`
	Admin          AdminConfig     `yaml:"admin"`
	Log            LogConfig       `yaml:"log"`
	// MaxClockSkew is how far this process's clock may be behind the
	// other registry processes' sharing the backend (redis, etcd; a bolt
	// registry restarted with its clock set back too): every lease
	// decision is made at the process's clock raised toward the
	// registry's time, the latest time any process committed a lease
	// decision at, by at most this much (registry.DecisionTime). Default
	// 1s, at most MaxClockSkewLimit; keep it at most the sidecars'
	// trust.clockSkew, or their proofs can look issued in the future.
	MaxClockSkew time.Duration `yaml:"maxClockSkew"`
}

// RedisConfig is the redis backend's server (the rules the sidecar's
// store.redis follows too: redisconf.Config) and the registry's state file.
type RedisConfig struct {
	// Config is the server: addr (required for the redis backend),
	// username, passwordFile (an inline password is refused), db, prefix
	// (used as a hash tag, "fgreg" when empty), tls, timeout, minReplicas
	// and replicaTimeout. MinReplicas, when positive, answers a write (a
	// grant, a renewal, ...) only once that many replicas acknowledged
	// it: a failover to one of them then does not issue its fence again.
	// Fewer fails the call (503).
	redisconf.Config `yaml:",inline"`
	// StateFile is where this process remembers the highest registry state
	// it saw and a fence ceiling above every fence it issued, to detect a
	// Redis restored from an older copy across its own restart (default
	// DataDir/redis-state.json; on a persistent volume for that to hold).
	StateFile string `yaml:"stateFile"`
}

// LeaseConfig bounds lease TTLs and waits.
type LeaseConfig struct {
	DefaultTTL time.Duration `yaml:"defaultTTL"`
	MinTTL     time.Duration `yaml:"minTTL"`
	MaxTTL     time.Duration `yaml:"maxTTL"`
	MaxWait    time.Duration `yaml:"maxWait"`
	// Retention keeps ended leases (for lookups by request ID or digest)
	// this long; they are then deleted, hourly. Fence sequences are kept
	// for ever.
	Retention time.Duration `yaml:"retention"`
}

// ProofConfig bounds status proofs.
type ProofConfig struct {
	MaxTTL time.Duration `yaml:"maxTTL"`
	// Reuse lets a status read by grant digest (a sidecar in registry
	// mode) be answered with a proof signed at most this long ago that
	// states exactly what the read found, instead of signing a new one
	// (default maxTTL/20 = 250 ms; at most maxTTL/4; negative: off). A
	// registry-mode route's status.maxAge must exceed it.
	Reuse time.Duration `yaml:"reuse"`
}

// AdminConfig says who may call /v1/admin.
type AdminConfig struct {
	// TokenFile holds a bearer token.
	TokenFile     string   `yaml:"tokenFile"`
	Identities    []string `yaml:"identities"`
	AllowLoopback bool     `yaml:"allowLoopback"`
}

// LogConfig sets the log level (debug, info, warn, error).
type LogConfig struct {
	Level string `yaml:"level"`
}

// DefaultListenPort is the port of the default listen address.
const DefaultListenPort = "8700"

// Default is the configuration used when no file is given.
func Default() Config {
	return Config{
		Listen:   listenaddr.Default(DefaultListenPort),
		DataDir:  "fencegate-data",
		Backend:  "bolt",
		Issuer:   registry.DefaultIssuer,
		Identity: identity.Config{Mode: identity.ModeMTLS},
		Leases: LeaseConfig{
			DefaultTTL: registry.DefaultTTL,
			MinTTL:     registry.DefaultMinTTL,
			MaxTTL:     registry.DefaultMaxTTL,
			MaxWait:    registry.DefaultMaxWait,
			Retention:  24 * time.Hour,
		},
		Proofs:       ProofConfig{MaxTTL: registry.DefaultMaxProofTTL},
		MaxClockSkew: registry.DefaultMaxClockSkew,
		Log:          LogConfig{Level: "info"},
	}
}

// Load reads a YAML file over the defaults. Unknown keys are errors.
func Load(path string) (Config, error) {
	c := Default()
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config: %s: %w", path, err)
	}
	if c.Listen == "" {
		c.Listen = listenaddr.Default(DefaultListenPort)
	}
	return c, nil
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("listen: %q: %v", c.Listen, err)
	}
	errs = append(errs, c.backendErrs()...)
	if c.Issuer == "" {
		add("issuer: must not be empty")
	}
	if c.SigningKey == "" && c.DataDir == "" {
		add("signingKey: required when there is no dataDir to generate one in")
	}
	errs = append(errs, c.TLS.Validate("tls")...)
	errs = append(errs, c.Identity.Validate()...)
	if c.Identity.Mode == identity.ModeMTLS && c.TLS.ClientCAFile == "" {
		add("identity.mode: mtls needs tls.clientCAFile (or use header mode behind a mesh, or insecure-header for development)")
	}
	errs = append(errs, c.Leases.errs()...)
	errs = append(errs, c.clockErrs()...)
	if c.Proofs.MaxTTL <= 0 {
		add("proofs.maxTTL: must be positive")
	}
	if _, err := zapcore.ParseLevel(c.Log.Level); err != nil {
		add("log.level: %v", err)
	}
	return errors.Join(errs...)
}

// backendErrs checks backend and what it needs (dataDir for bolt, the
// redis section for redis, the etcd section for etcd).
func (c Config) backendErrs() []error {
	switch c.Backend {
	case "bolt":
		if c.DataDir == "" {
			return []error{errors.New("dataDir: required for the bolt backend")}
		}
	case "redis":
		return c.Redis.Validate("redis")
	case "etcd":
		return c.Etcd.Validate("etcd")
	case "memory":
	default:
		return []error{fmt.Errorf("backend: %q is not bolt, redis, etcd or memory", c.Backend)}
	}
	return nil
}

// MaxClockSkewLimit bounds maxClockSkew: a process stepped ahead drags
// the others' grants and proofs up to maxClockSkew past their clocks.
const MaxClockSkewLimit = time.Minute

// clockErrs checks maxClockSkew.
func (c Config) clockErrs() []error {
	if c.MaxClockSkew <= 0 || c.MaxClockSkew > MaxClockSkewLimit {
		return []error{fmt.Errorf("maxClockSkew: %s: want more than 0 and at most %s", c.MaxClockSkew, MaxClockSkewLimit)}
	}
	return nil
}

// errs checks the leases section.
func (l LeaseConfig) errs() []error {
	var errs []error
	if l.Retention < l.MaxTTL {
		errs = append(errs, fmt.Errorf("leases.retention: must be at least maxTTL (%s), or a grant's request ID could be forgotten while it is held", l.MaxTTL))
	}
	if l.MinTTL <= 0 || l.MaxTTL <= 0 || l.DefaultTTL <= 0 || l.MaxWait <= 0 {
		errs = append(errs, errors.New("leases: defaultTTL, minTTL, maxTTL and maxWait must be positive"))
	} else if l.MinTTL > l.DefaultTTL || l.DefaultTTL > l.MaxTTL {
		errs = append(errs, errors.New("leases: need minTTL <= defaultTTL <= maxTTL"))
	}
	return errs
}
