package redisconf

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/fencegate/fencegate/tlsfiles"
)

// MaxPrefixLen is the longest key prefix Config accepts.
const MaxPrefixLen = 64

// Config is how a fencegate process reaches its Redis server: the
// registry's redis section and the sidecar's store.redis, one type with
// one set of rules (Validate). A single primary, which should run with
// appendonly yes and appendfsync always for acknowledged writes to
// survive its crash.
type Config struct {
	// Addr is the server's host:port.
	Addr string `yaml:"addr"`
	// Username is the ACL user; empty for the default user.
	Username string `yaml:"username"`
	// Password is refused when set (Validate): a password written into
	// the configuration file is a secret in a file meant to be read,
	// copied and versioned. The key is still read, so that a file of an
	// earlier registry version with an empty password loads; put the
	// password in PasswordFile.
	Password string `yaml:"password"`
	// PasswordFile holds the password (trailing newlines ignored): a
	// mounted Secret. Empty for none.
	PasswordFile string `yaml:"passwordFile"`
	// DB is the logical database number (default 0).
	DB int `yaml:"db"`
	// Prefix starts every key (empty: the backend's default); processes
	// sharing a server each need their own. At most MaxPrefixLen bytes of
	// printable ASCII without '{', '}' or spaces: braces would break the
	// keys' hash tags, and a space could not be named in an ACL key
	// pattern (~prefix*) restricting a user to its keys.
	Prefix string `yaml:"prefix"`
	// TLS connects over TLS when Enabled (files re-read when they
	// rotate): enabled, caFile, certFile, keyFile, serverName (default:
	// addr's host).
	TLS tlsfiles.ClientConfig `yaml:"tls"`
	// Timeout bounds dialing and each read and write (default: go-redis's,
	// 5s to dial, 3s to read or write).
	Timeout time.Duration `yaml:"timeout"`
	// MinReplicas, when positive, makes every write wait (WAIT) until that
	// many replicas acknowledged it, at most ReplicaTimeout (default 1s);
	// fewer fails the write. Set it to the number of replicas a failover
	// may promote.
	MinReplicas    int           `yaml:"minReplicas"`
	ReplicaTimeout time.Duration `yaml:"replicaTimeout"`
	// AllowNonDurable starts even when the server reports other than
	// appendonly yes and appendfsync always (CONFIG GET), which is refused
	// by default: such a server can answer a write and lose it in a
	// restart, and with it a highest fence (a store) or the last fence
	// issued (a registry). For development against a scratch Redis only,
	// or where the operator has ruled the loss out otherwise (the
	// registry's state file and the store's generation check detect a
	// server that came back empty or older, but cannot undo what a stale
	// writer did before).
	AllowNonDurable bool `yaml:"allowNonDurable"`
}

// Validate reports every problem of c at once, each named under section
// (the key the configuration file holds c under: "redis",
// "store.redis"). It reads no file.
func (c Config) Validate(section string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(section+format, a...)) }
	if c.Addr == "" {
		add(".addr: required (host:port of the Redis server)")
	} else if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		add(".addr: %q: %v", c.Addr, err)
	}
	if c.Password != "" {
		add(".password: a password written into the configuration is refused; put it in a file (a mounted Secret) and name it in %s.passwordFile", section)
	}
	if c.DB < 0 {
		add(".db: %d must not be negative", c.DB)
	}
	if !validPrefix(c.Prefix) {
		add(".prefix: %q must be at most %d bytes of printable ASCII without braces or spaces", c.Prefix, MaxPrefixLen)
	}
	if c.Timeout < 0 {
		add(".timeout: %v must not be negative (0 is the default)", c.Timeout)
	}
	if c.MinReplicas < 0 || c.ReplicaTimeout < 0 {
		add(": minReplicas and replicaTimeout must not be negative")
	}
	return append(errs, c.TLS.Validate(section+".tls")...)
}

// validPrefix reports whether p is a prefix Validate accepts (empty is:
// the backend's default).
func validPrefix(p string) bool {
	if len(p) > MaxPrefixLen {
		return false
	}
	for i := range len(p) {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '{' || b == '}' {
			return false
		}
	}
	return true
}

// ReadPassword returns the password in PasswordFile without its trailing
// newlines, or "" when there is none. section names the key in errors.
func (c Config) ReadPassword(section string) (string, error) {
	if c.PasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("redisconf: %s.passwordFile: %w", section, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Host is the host of Addr (the default TLS server name).
func (c Config) Host() string {
	host, _, _ := net.SplitHostPort(c.Addr)
	return host
}
