package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "fg"

// DefaultMaxAttempts bounds the optimistic attempts of one call when
// Options.MaxAttempts is zero.
const DefaultMaxAttempts = 100

// MaxPrefixLen is the longest key prefix accepted.
const MaxPrefixLen = 64

// Options configures a Redis store.
type Options struct {
	// Addr is the server's host:port (Open only; required there).
	Addr string
	// Username and Password authenticate to the server (Open only; ACL
	// user, or the legacy requirepass when Username is empty).
	Username string
	Password string
	// DB is the logical database (Open only).
	DB int
	// TLS, when set, makes Open connect over TLS with this configuration.
	TLS *tls.Config
	// DialTimeout, ReadTimeout and WriteTimeout are the client's timeouts
	// (Open only); zero keeps go-redis's defaults (5s, 3s, 3s).
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration

	// Prefix starts every key, so several services can share one server;
	// DefaultPrefix when empty. It must not contain '{' or '}' (they
	// would break the per-resource hash tag).
	Prefix string
	// MaxResponseBody is the stored response body limit (see
	// store.BodyLimit).
	MaxResponseBody int
	// MaxAttempts bounds the optimistic attempts of one call under
	// contention (DefaultMaxAttempts when zero); past it the call fails
	// with ErrContention, writing nothing.
	MaxAttempts int

	// AllowEviction skips Open's check that the server's maxmemory-policy
	// is noeviction (Open only). Set it only when keys cannot be evicted
	// anyway: a volatile-* policy (the store sets no TTL) on a managed
	// server that hides CONFIG's answer behind another policy name, say.
	// An evicted record forgets its highest fence: fail-open.
	AllowEviction bool
	// AllowNonDurable lets Open accept a server that does not run with
	// appendonly yes and appendfsync always (see ErrNotDurable), logging a
	// warning that names what it reported: for a scratch server in
	// development, never where a lost write matters.
	AllowNonDurable bool
	// Logger receives Open's warnings: a server that does not let it read
	// maxmemory-policy or its persistence (CONFIG disabled), one accepted
	// under AllowNonDurable; slog.Default() when nil.
	Logger *slog.Logger

	// MinReplicas, when positive, makes every call that wrote wait (WAIT,
	// on the transaction's connection, one more round trip) until that
	// many replicas acknowledged its writes, at most ReplicaTimeout
	// (redisconf.DefaultReplicaTimeout when zero); fewer is an error
	// wrapping redisconf.ErrNotReplicated, which the sidecar answers like
	// any store failure (STORE_UNAVAILABLE, nothing forwarded). The write
	// is on the primary all the same, so a Begin that failed this way
	// leaves its marker: BUSY, then MUTATION_UNKNOWN. Set it to the number
	// of replicas a failover may promote. See the package comment,
	// "Durability".
	MinReplicas    int
	ReplicaTimeout time.Duration

	// CallerClock makes every call decide at its input's Now (and a Begin
	// keep its Deadline) instead of the server's TIME. Leave it off when
	// several sidecars share the store: with it, in-flight deadlines and
	// retention are judged by each replica's own clock, and their skew
	// moves when a mutation counts as expired. Tests that drive a virtual
	// clock (storetest) set it. See time.go.
	CallerClock bool

	// GenerationFile, when set (Open only), is the local file where this
	// sidecar records the generation marker of the Redis data set it uses
	// (P:gen); a missing or different marker at Open or on any later call
	// fails the store closed with ErrGenerationChanged. See the package
	// comment, "Data loss".
	GenerationFile string
	// AcknowledgeGenerationChange makes Open adopt Redis's current
	// generation marker instead of failing closed: the operator's
	// acknowledgement of a loss (Open only, with GenerationFile).
	AcknowledgeGenerationChange bool
	// ExpectedGeneration, when set (Open and New), is the generation
	// marker every call must see, as a GenerationFile's would be, but
	// kept by the caller (the sidecar takes it from its outside anchor)
	// instead of a local file; see Store.ExpectGeneration to change it.
	// It is not checked at Open: the first call that reads the marker
	// fails the store closed on a mismatch. Exclusive with GenerationFile.
	ExpectedGeneration string
}

// ErrContention is returned when a call lost the optimistic race
// Options.MaxAttempts times in a row. Nothing was written by that call.
var ErrContention = errors.New("store/redis: too much contention on the resource")

// Store is the Redis backend. It implements store.Store (the methods of
// store.NewTxBackend over its optimistic transactions) and store.TxStore.
type Store struct {
	txBackend

	c           goredis.UniversalClient
	owned       bool
	k           keys
	maxAttempts int
	callerClock bool
	minReplicas int
	replicaWait time.Duration
	closed      atomic.Bool
	// gen is the generation marker expected and the loss detected;
	// genPath the local generation file (Options.GenerationFile) that
	// records the expectation, set by Open.
	gen     store.GenerationCheck
	genPath string
	// cache holds the values the transitions last read or wrote, for the
	// next transitions to decide on (checked by the step script); clock
	// estimates the server's clock between replies.
	cache *cache
	clock serverClock
	// slots bounds the steps deciding or in flight at once to the
	// client's connection pool (txn.go, runStep).
	slots chan struct{}
	// scriptSent is set once the server ran the step script for this
	// Store: later steps send its SHA-1 (EVALSHA) instead of its source.
	scriptSent atomic.Bool
	// retried counts the steps the script refused for a read that no
	// longer held (a stale cache, a lost race), refusedTime those it
	// refused for their time alone: each ran again.
	retried, refusedTime atomic.Int64
}

// txBackend is the store.Store that store.NewTxBackend makes of a Store,
// embedded so that its methods are the Store's.
type txBackend = store.Store

var (
	_ store.Store   = (*Store)(nil)
	_ store.TxStore = (*Store)(nil)
)

// Open connects to the server of opts.Addr, checks it answers PING and
// that its maxmemory-policy is noeviction (see ErrEvictionPolicy and
// Options.AllowEviction), and returns a store over it; Close closes that
// client.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Addr == "" {
		return nil, errors.New("store/redis: open: addr required")
	}
	c := goredis.NewClient(&goredis.Options{
		Addr:         opts.Addr,
		Username:     opts.Username,
		Password:     opts.Password,
		DB:           opts.DB,
		TLSConfig:    opts.TLS,
		DialTimeout:  opts.DialTimeout,
		ReadTimeout:  opts.ReadTimeout,
		WriteTimeout: opts.WriteTimeout,
		// No client-side retries: a command whose reply was lost may have
		// run, and an EXEC re-sent on a new connection would run without
		// its WATCH. The store's own loop retries only a lost race.
		MaxRetries: -1,
	})
	s, err := New(c, opts)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	s.owned = true
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("store/redis: open %s: %w", opts.Addr, err)
	}
	if !opts.AllowEviction {
		if err := checkEviction(ctx, c, opts.Logger); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if err := checkDurable(ctx, opts.AllowNonDurable, c, opts.Logger); err != nil {
		_ = c.Close()
		return nil, err
	}
	if opts.GenerationFile != "" {
		if err := s.initGeneration(ctx, opts.GenerationFile, opts.AcknowledgeGenerationChange); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("store/redis: open %s: %w", opts.Addr, err)
		}
	}
	return s, nil
}

// New returns a store over a client the caller owns (Close leaves it
// open). Only opts.Prefix, MaxResponseBody, MaxAttempts, MinReplicas,
// ReplicaTimeout, CallerClock and ExpectedGeneration are used. The
// client must reach a single primary (a *redis.Client, or a failover
// client): a cluster client is refused, see the package comment.
func New(c goredis.UniversalClient, opts Options) (*Store, error) {
	if c == nil {
		return nil, errors.New("store/redis: nil client")
	}
	if _, ok := c.(*goredis.ClusterClient); ok {
		return nil, errors.New("store/redis: Redis Cluster is not supported: use a single primary")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if opts.MaxAttempts < 0 {
		return nil, errors.New("store/redis: maxAttempts must be >= 0")
	}
	attempts := opts.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	if opts.ExpectedGeneration != "" {
		if opts.GenerationFile != "" {
			return nil, errors.New("store/redis: expectedGeneration and generationFile are exclusive")
		}
		if err := store.ValidateGeneration(opts.ExpectedGeneration); err != nil {
			return nil, fmt.Errorf("store/redis: expectedGeneration: %w", err)
		}
	}
	s := &Store{c: c, k: keys{prefix: prefix}, maxAttempts: attempts, callerClock: opts.CallerClock,
		minReplicas: opts.MinReplicas, replicaWait: opts.ReplicaTimeout, cache: newCache(),
		slots: make(chan struct{}, poolSize(c))}
	s.gen.Expect(opts.ExpectedGeneration)
	s.txBackend = store.NewTxBackend(s, store.TxOptions{MaxResponseBody: opts.MaxResponseBody, CompactEachResource: true, ClockLag: StepBehind})
	return s, nil
}

// poolSize is the size of c's connection pool: its Options' PoolSize, or
// go-redis's default (10 per GOMAXPROCS) when unset or unknown.
func poolSize(c goredis.UniversalClient) int {
	if o, ok := c.(interface{ Options() *goredis.Options }); ok && o.Options().PoolSize > 0 {
		return o.Options().PoolSize
	}
	return 10 * runtime.GOMAXPROCS(0)
}

// ValidatePrefix checks a key prefix: 1..MaxPrefixLen printable ASCII
// bytes without '{', '}' or spaces.
func ValidatePrefix(p string) error {
	if p == "" || len(p) > MaxPrefixLen {
		return fmt.Errorf("store/redis: prefix must be 1..%d bytes", MaxPrefixLen)
	}
	for i := range len(p) {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '{' || b == '}' {
			return fmt.Errorf("store/redis: prefix %q: byte %d not allowed", p, i)
		}
	}
	return nil
}

// Close implements store.Store. It closes the client only if Open made it.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.owned {
		if err := s.c.Close(); err != nil {
			return fmt.Errorf("store/redis: close: %w", err)
		}
	}
	return nil
}

// enter checks a call may start: ctx not done, store open. It returns the
// context the call's Redis commands run under: once started, a call is not
// abandoned half-way because ctx is cancelled (the client's timeouts
// bound it).
func (s *Store) enter(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if _, lost := s.gen.Expected(); lost != nil {
		return nil, lost
	}
	return context.WithoutCancel(ctx), nil
}

// wrap marks a Redis (transport, server) error; it is never a decision.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store/redis: %s: %w", op, err)
}

// keys builds the store's Redis keys. Every key of one resource carries
// the hash tag {escaped resource}; see the package comment for the layout.
type keys struct{ prefix string }

// escape makes s safe inside a key segment: no ':', '{', '}' (and '%'
// itself escaped), so segments split unambiguously.
func escape(s string) string {
	if !strings.ContainsAny(s, "%:{}") {
		return s
	}
	r := strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")
	return r.Replace(s)
}

func (k keys) res(resource string) string      { return k.prefix + ":{" + escape(resource) + "}:" }
func (k keys) record(resource string) string   { return k.res(resource) + "rec" }
func (k keys) receipts(resource string) string { return k.res(resource) + "rcpts" }
func (k keys) quarantine(resource string) string {
	return k.res(resource) + "q"
}
func (k keys) receipt(rk store.ReceiptKey) string {
	return k.res(rk.Resource) + "rcpt:" + u(rk.Fence) + ":" + u(rk.Seq)
}
func (k keys) ops(resource, operationID string) string {
	return k.res(resource) + "ops:" + escape(operationID)
}

// Global keys: indexes of resources, counters, the enforcement ledger.
func (k keys) all() string         { return k.prefix + ":res" }
func (k keys) unknown() string     { return k.prefix + ":unknown" }
func (k keys) paused() string      { return k.prefix + ":paused" }
func (k keys) quarantined() string { return k.prefix + ":quar" }
func (k keys) nReceipts() string   { return k.prefix + ":n:rcpt" }
func (k keys) nQuarantine() string { return k.prefix + ":n:quar" }
func (k keys) bytes() string       { return k.prefix + ":bytes" }
func (k keys) enforcement() string { return k.prefix + ":enf" }
func (k keys) generation() string  { return k.prefix + ":gen" }
func (k keys) trust() string       { return k.prefix + ":trust" }

// member is a receipt's entry in its resource's receipts sorted set: all
// scores are 0, so members sort by bytes, and fixed-width decimals make
// that (fence, seq) order.
func member(fence, seq uint64) string {
	return fmt.Sprintf("%020d:%020d", fence, seq)
}
