package sim

import (
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
)

// materials are what every round of a run shares and never changes: the
// registry's signing key, the key a rotation moves to, the trust bundle
// file the sidecars load, and the attacker's key (trusted by nobody).
type materials struct {
	signer     *keys.Signer
	rotated    *keys.Signer // the key a rotation (FaultRotate) moves to
	forger     *keys.Signer // a key of its own (unknown kid)
	forgerSame *keys.Signer // another key under the trusted key's kid (bad signature)
	bundlePath string
	// forgerBundle also trusts the forger's key (SabotageTrustForger).
	forgerBundle string
	// trustKey, rotatedKey and forgerKey are the public halves a round's
	// own bundle file is written from (a rotation, FaultKeyAdd).
	trustKey, rotatedKey, forgerKey jwk.Key
	dir                             string
	jwks                            jwk.Set // the registry's published bundle
	// pg is the run's PostgreSQL, when the shared stores are on it
	// (usePostgres).
	pg *pgRun
	// etcd is the run's etcd cluster, when the registries are on it
	// (useEtcd).
	etcd *etcdRun
}

// newMaterials derives the keys from seed (Ed25519 key generation reads
// only its random source, so the keys, and every signature, are the same
// for the same seed) and writes the trust bundle to a temporary directory.
func newMaterials(seed uint64) (*materials, error) {
	gen := func(stream uint64) (jwk.Key, error) {
		var s [32]byte
		for i := range 4 {
			v := mix(seed, stream*4+uint64(i))
			for b := range 8 {
				s[i*8+b] = byte(v >> (8 * b))
			}
		}
		return keys.Generate(jwa.EdDSA, rand.NewChaCha8(s))
	}
	var ks [4]jwk.Key
	for i := range ks {
		k, err := gen(uint64(i + 1))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		ks[i] = k
	}
	key, fk, fs, rk := ks[0], ks[1], ks[2], ks[3]
	if err := fs.Set(jwk.KeyIDKey, key.KeyID()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	m := &materials{}
	var err error
	for _, p := range []struct {
		k   jwk.Key
		dst **keys.Signer
	}{{key, &m.signer}, {fk, &m.forger}, {fs, &m.forgerSame}, {rk, &m.rotated}} {
		if *p.dst, err = keys.NewSigner(p.k); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	bundle, err := keys.Bundle(false, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	m.jwks = bundle
	m.trustKey, m.rotatedKey, m.forgerKey = key, rk, fk
	// A memory file system where there is one: rotations rewrite bundle
	// files, and every sidecar start reads one.
	tmp := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		tmp = "/dev/shm"
	}
	if m.dir, err = os.MkdirTemp(tmp, "fencegate-sim-"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	m.bundlePath = filepath.Join(m.dir, "jwks.json")
	m.forgerBundle = filepath.Join(m.dir, "jwks-with-forger.json")
	both, err := keys.Bundle(false, key, fk)
	if err == nil {
		err = keys.Save(m.bundlePath, bundle)
	}
	if err == nil {
		err = keys.Save(m.forgerBundle, both)
	}
	if err != nil {
		os.RemoveAll(m.dir)
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return m, nil
}

func (m *materials) close() {
	if m.pg != nil {
		_ = m.pg.close()
	}
	if m.etcd != nil {
		_ = m.etcd.close()
	}
	os.RemoveAll(m.dir)
}

// usePostgres puts the run's shared stores on the PostgreSQL database dsn
// names (nothing when dsn is empty), with a pool of conns connections.
func (m *materials) usePostgres(dsn string, conns int) error {
	if dsn == "" {
		return nil
	}
	pg, err := openPostgres(context.Background(), dsn, conns)
	if err != nil {
		return err
	}
	m.pg = pg
	return nil
}

// useEtcd puts the run's registries on the etcd cluster whose client URLs
// are endpoints (nothing when there are none).
func (m *materials) useEtcd(endpoints []string) error {
	if len(endpoints) == 0 {
		return nil
	}
	e, err := openEtcdRun(endpoints)
	if err != nil {
		return err
	}
	m.etcd = e
	return nil
}

// mix is SplitMix64 over (a, b): independent streams from one seed.
func mix(a, b uint64) uint64 {
	z := a ^ (b+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// sidecar is one sidecar process: a proxy.Proxy over the shared store,
// through a handle that dies with the process.
type sidecar struct {
	p    *proxy.Proxy
	st   *processStore
	life int // how many processes this replica has had
	// sent counts the mutations this process handed to the backend that
	// may have reached it (all but refused connections), as the backend
	// saw them: the sidecar's own Coverage must say the same.
	sent uint64
	clk  offsetClock
	// an is the process's outside anchor of the shared store (anchor.go),
	// bound its lower bound on the time (authn.TimeBound).
	an    *anchor.Store
	bound *authn.TimeBound
}

// processStore is the shared store as one sidecar process sees it. When
// the process dies (crash), its later calls fail without touching the
// store: a dead process writes nothing, so a mutation it had begun stays
// in flight until its deadline, as after a real crash. Every receipt a
// process stores is noted in the round's ledger of receipts (receipts),
// which the end of the round compares with what the backend applied.
type processStore struct {
	store.Store
	r    *round
	dead bool
	sab  Sabotage
	// gen is the process's check of the store's generation marker, which
	// the anchor tells it to expect (anchor.go).
	gen generationCheck
}

// Record is the store's read; under SabotageReadWrites it also pauses the
// resource (a broken backend whose read path writes), so the answers that
// only read the store (a stale owner's refinement) change a record.
func (s *processStore) Record(ctx context.Context, resource string) (store.Record, error) {
	if err := s.enter(); err != nil {
		return store.Record{}, err
	}
	if s.sab == SabotageReadWrites {
		_, _ = s.Store.Pause(ctx, store.PauseInput{Resource: resource, Reason: store.PauseOperator, Detail: "sabotage", Now: time.UnixMilli(0)})
	}
	v, err := s.Store.Record(ctx, resource)
	return v, s.gen.explain(err)
}

var errProcessDead = errors.New("sim: the sidecar process died")

func (s *processStore) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := s.enter(); err != nil {
		return store.BeginResult{}, err
	}
	if s.sab == SabotageConflictReplays {
		// The broken part: a store that compares a segment with its
		// receipt by fence and segment alone, not by payload.
		if rc, err := s.Store.Receipt(ctx, store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}); err == nil && rc.Root == in.Root {
			in.PayloadDigest = rc.PayloadDigest
		}
	}
	v, err := s.Store.Begin(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	if err := s.enter(); err != nil {
		return store.Receipt{}, err
	}
	rc, err := s.Store.Commit(ctx, in)
	err = s.gen.explain(err)
	if err == nil {
		s.r.noteReceipt(rc)
	}
	return rc, err
}
func (s *processStore) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	if err := s.enter(); err != nil {
		return store.ResolveResult{}, err
	}
	s.resolveSabotage(&in)
	res, err := s.Store.Resolve(ctx, in)
	err = s.gen.explain(err)
	if err == nil && res.Receipt != nil {
		s.r.noteReceipt(*res.Receipt)
	}
	return res, err
}

// TrustedKeys are the store's trust pins; under SabotageFilePins also a
// pin of every key the bundle file holds now.
func (s *processStore) TrustedKeys(ctx context.Context) ([]store.TrustedKey, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	pins, err := s.Store.TrustedKeys(ctx)
	err = s.gen.explain(err)
	if err != nil || s.sab != SabotageFilePins {
		return pins, err
	}
	for _, k := range s.r.bundleKeys {
		pub, err := jwk.PublicKeyOf(k)
		if err != nil {
			return nil, err
		}
		sum, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			return nil, err
		}
		pins = append(pins, store.TrustedKey{Kid: k.KeyID(), Thumbprint: base64.RawURLEncoding.EncodeToString(sum),
			Alg: k.Algorithm().String(), How: store.TrustOperator, PinnedAt: time.UnixMilli(0)})
	}
	return pins, nil
}

func (s *processStore) resolveSabotage(in *store.ResolveInput) {
	if s.sab == SabotageNotQuiet && !in.Applied {
		in.Closed = true // the broken part: the quiet time is skipped
	}
}

func (s *processStore) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	if err := s.enter(); err != nil {
		return store.Mutation{}, err
	}
	v, err := s.Store.MarkUnknown(ctx, in)
	return v, s.gen.explain(err)
}
func (s *processStore) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	if err := s.enter(); err != nil {
		return store.Record{}, err
	}
	v, err := s.Store.Abort(ctx, in)
	return v, s.gen.explain(err)
}

// Route and resource names of a round.
const (
	mainResource  = "item/main"
	mainPath      = "/v1/items/main"
	otherResource = "item/other"
	backendURL    = "http://backend.sim"
	effectsPath   = "/v1/effects/"
)

// proxyConfig is the sidecar configuration of a round; bundle is the
// trust bundle file (the round's own when a rotation rewrites it).
func proxyConfig(m *materials, rc roundConfig, sab Sabotage, bundle string) proxy.Config {
	mode := proxy.ModeEnforce
	switch sab {
	case SabotageShadow:
		mode = proxy.ModeShadow
	case SabotageTrustForger:
		bundle = m.forgerBundle
	}
	st := proxy.RouteStatus{Mode: proxy.StatusRegistry, MaxAge: rc.MaxAge}
	if rc.Proof {
		st.Mode = proxy.StatusProof
	}
	route := proxy.RouteConfig{
		Method: http.MethodPut, Path: "/v1/items/{id}", Resource: "item/{id}", Mode: mode,
		Status: st, IdempotencyKey: rc.Idempotent, BusyWait: busyWait,
	}
	if rc.EffectQuery {
		route.EffectQuery = backendURL + effectsPath + "{operationId}"
	}
	return proxy.Config{
		Backend:   proxy.BackendConfig{URL: backendURL, Timeout: backendTimeout, MaxApplyDelay: maxApplyDelay},
		Routes:    []proxy.RouteConfig{route},
		Identity:  identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:     proxy.TrustConfig{Bundle: bundle, ClockSkew: rc.ClockSkew},
		Reconcile: proxy.ReconcileConfig{Interval: rc.Reconcile},
		Retention: proxy.RetentionConfig{MaxAge: rc.KeepFor, MaxPerResource: rc.KeepReceipts, Interval: rc.Compact},
	}
}

// newRegistry builds the real registry over the round's registry store
// (regstore.go: registry/memory, or registry/etcd), whose saves the
// simulation restores: a registry put back to an older state (design
// section 10) forgets the fences it issued since, and issues them again.
// A restart (a key rotation) builds another over the same store.
// Its Run is not run: over registry/memory (no registry.Notifier, no
// registry.Runner) Run has no work and would only wait; on registry/etcd
// it would watch for the wake-ups of other registry processes, and a
// round has one. A waiting acquire is woken in process by the release
// itself (registry.Run says so); every loop of the world is a step of the
// virtual clock instead.
func newRegistry(signer *keys.Signer, rs registryStore, clk simClock, rnd io.Reader) (*registry.Registry, error) {
	r, err := registry.New(registry.Options{
		Backend: rs.backend(), Signer: signer, Clock: clk, Rand: rnd,
		Metrics: discardMetrics{},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: registry: %w", ErrSetup, err)
	}
	return r, nil
}

// registryStatus is the sidecars' StatusSource: a status read by digest
// at the real registry, through the simulated network (a lost read is an
// error, so the sidecar answers REGISTRY_UNAVAILABLE).
type registryStatus struct{ r *round }

type notFoundError struct{}

func (notFoundError) Error() string        { return "registry: not found" }
func (notFoundError) Code() fencegate.Code { return fencegate.CodeNotFound }

func (s registryStatus) StatusByDigest(ctx context.Context, digest string) (*fencegate.Lease, error) {
	r := s.r
	if r.cur.statusDrop {
		return nil, errors.New("sim: the status read was lost in the network")
	}
	res, err := r.reg.GrantStatus(context.Background(), digest)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, notFoundError{}
	}
	if err != nil {
		return nil, err
	}
	st := res.Status
	if r.sabotage == SabotageStatusLies && res.View.State != fencegate.StateHeld {
		// The broken part: a registry that says HELD for a lease that
		// is not (signed with the registry's own key, so it verifies).
		claims := res.StatusClaims
		claims.State = fencegate.StateHeld
		claims.ExpiresAt = claims.IssuedAt + uint64(registry.DefaultMaxProofTTL/time.Millisecond)
		if st, err = r.m.signer.Sign(fencegate.StatusSchema, &claims); err != nil {
			return nil, err
		}
	}
	return &fencegate.Lease{Lease: res.View.Lease.Lease, Resource: res.View.Lease.Resource, State: res.View.State,
		FenceToken: res.View.Lease.Fence, GrantDigest: res.View.Lease.Digest, Status: string(st)}, nil
}

// discardMetrics is the Metrics registerer of every part in a round: the
// collectors are made and updated as in production, but not registered
// anywhere (a registry per round per part costs a tenth of the run, and
// nothing reads them: the sidecars' coverage is read with Coverage()).
type discardMetrics struct{}

func (discardMetrics) Register(prometheus.Collector) error  { return nil }
func (discardMetrics) MustRegister(...prometheus.Collector) {}
func (discardMetrics) Unregister(prometheus.Collector) bool { return true }
