package redis

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// durable are the redis-server arguments under which an acknowledged
// write survives SIGKILL.
var durable = []string{"--appendonly", "yes", "--appendfsync", "always"}

// execHook runs before, once it is armed, just before the next MULTI/EXEC
// pipeline is sent: between a transition's WATCHed reads and its write.
// It counts the MULTI/EXEC pipelines sent.
type execHook struct {
	armed  atomic.Bool
	before func()
	execs  atomic.Int64
}

func (h *execHook) arm(f func()) { h.before = f; h.armed.Store(true) }

func (h *execHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *execHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (h *execHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			if c.Name() != "exec" {
				continue
			}
			h.execs.Add(1)
			if h.armed.CompareAndSwap(true, false) {
				h.before()
			}
			break
		}
		return next(ctx, cmds)
	}
}

// openHooked opens a store on srv under prefix with short client timeouts
// and go-redis's defaults otherwise, with an execHook on its client.
func openHooked(t *testing.T, srv *redistest.Server, prefix string) (*Store, *execHook) {
	t.Helper()
	s, err := Open(context.Background(), Options{Addr: srv.Addr(), Prefix: prefix, CallerClock: true,
		DialTimeout: time.Second, ReadTimeout: 150 * time.Millisecond, WriteTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := &execHook{}
	s.c.AddHook(h)
	return s, h
}

// admin is a plain client on srv, to fill, inspect and free keys.
func admin(t *testing.T, srv *redistest.Server) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisError fails t unless err is a Redis error: prefixed, wrapping none
// of the store's decision errors.
func redisError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !strings.HasPrefix(err.Error(), "store/redis: ") {
		t.Errorf("%s: error %q lacks the store/redis prefix", what, err)
	}
	for _, sentinel := range []error{store.ErrNotInFlight, store.ErrConflict, store.ErrOutcomeUnknown, store.ErrNotFound, store.ErrInvalidInput, store.ErrCorrupt, store.ErrClosed} {
		if errors.Is(err, sentinel) {
			t.Errorf("%s: Redis error %q passes for the decision error %v", what, err, sentinel)
		}
	}
}

// begin calls Begin with in at now (with a deadline a minute later) and
// returns its decision.
func begin(t *testing.T, s *Store, in store.BeginInput, now time.Time) store.Decision {
	t.Helper()
	in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
	res, err := s.Begin(context.Background(), in)
	if err != nil {
		t.Fatalf("Begin %s at %v: %v", in.Ref().OperationID(), now, err)
	}
	return res.Decision
}

// TestFrozenServerFailsClosed freezes the server (DEBUG SLEEP) after a
// Begin's WATCHed reads, just before its MULTI/EXEC: the client times out
// and Begin returns a Redis error and no decision. The frozen server
// still runs the EXEC when it wakes (it was in its socket before the
// client gave up), so the marker is in flight although Begin failed:
// this is the ambiguous outcome. The same attempt, or another payload for
// the same (fence, seq), must then never PROCEED: BUSY until the marker's
// deadline, MUTATION_UNKNOWN after it. A sidecar rejects the failed Begin
// with STORE_UNAVAILABLE and forwards nothing, so the marker left behind
// is exactly what the deadline rule turns into UNKNOWN.
func TestFrozenServerFailsClosed(t *testing.T) {
	srv := redistest.Start(t, redistest.DebugArgs...)
	s, hook := openHooked(t, srv, "slow")
	ctx := context.Background()
	in := storetest.Attempt("slow/r", 1, 1, "first")

	var wait func() error
	hook.arm(func() {
		var err error
		if wait, err = srv.Freeze(700 * time.Millisecond); err != nil {
			t.Error(err)
		}
		time.Sleep(20 * time.Millisecond) // let the server take the DEBUG SLEEP first
	})
	res, err := s.Begin(ctx, in)
	if res.Decision != "" {
		t.Errorf("Begin with the server frozen decided %s", res.Decision)
	}
	// go-redis must not have sent the EXEC again (on a new connection it
	// would run without its WATCH).
	if n := hook.execs.Load(); n != 1 {
		t.Errorf("the failed Begin sent %d MULTI/EXEC, want 1", n)
	}
	redisError(t, "Begin with the server frozen", err)
	if wait == nil {
		t.Fatal("the hook did not run: no MULTI/EXEC was sent")
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	rec, err := s.Record(ctx, "slow/r")
	if err != nil {
		t.Fatalf("record after the freeze: %v", err)
	}
	if rec.InFlight == nil || rec.InFlight.Ref() != in.Ref() {
		t.Fatalf("after the freeze the record is %+v; want the failed Begin's marker in flight (the EXEC ran late)", rec)
	}
	other := storetest.Attempt("slow/r", 1, 1, "other")
	for _, c := range []struct {
		in   store.BeginInput
		now  time.Time
		want store.Decision
	}{
		{in, storetest.T0.Add(time.Second), store.DecisionBusy},
		{other, storetest.T0.Add(time.Second), store.DecisionBusy},
		{in, storetest.T0.Add(2 * time.Minute), store.DecisionMutationUnknown},
		{other, storetest.T0.Add(2 * time.Minute), store.DecisionMutationUnknown},
		{storetest.Attempt("slow/r", 1, 2, "next"), storetest.T0.Add(2 * time.Minute), store.DecisionMutationUnknown},
	} {
		if got := begin(t, s, c.in, c.now); got != c.want {
			t.Errorf("Begin %s (%s) at %v after the ambiguous Begin: %s, want %s", c.in.Ref().OperationID(), c.in.PayloadDigest, c.now, got, c.want)
		}
	}
	if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "slow/r", Fence: 1, Seq: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a receipt for the segment no one forwarded: %v", err)
	}
}

// dump returns every key under prefix with its DUMP, to compare states.
func dump(t *testing.T, c *goredis.Client, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	ks, err := c.Keys(ctx, prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, k := range ks {
		v, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// TestOutOfMemoryFailsClosed fills a noeviction server: Commit and Begin
// fail with the server's OOM as a Redis error, never a decision, and
// write nothing (a MULTI with a refused command aborts wholly: every key
// of the store is unchanged). Once the filler is deleted the same calls
// succeed.
func TestOutOfMemoryFailsClosed(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	s, _ := openHooked(t, srv, "oom")
	ctx := context.Background()
	a := admin(t, srv)
	in := storetest.Attempt("oom/r", 1, 1, "a")
	if got := begin(t, s, in, storetest.T0); got != store.DecisionProceed {
		t.Fatalf("Begin: %s", got)
	}
	filled := redistest.Fill(t, a)
	before := dump(t, a, "oom")

	_, err := s.Commit(ctx, storetest.Answer(in.Ref()))
	redisError(t, "Commit out of memory", err)
	// The server refuses the queued writes with OOM and EXEC with
	// EXECABORT, which is what go-redis reports.
	if err != nil && !strings.Contains(err.Error(), "OOM") && !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("Commit out of memory: %v, want the server's OOM or EXECABORT", err)
	}
	res, err := s.Begin(ctx, storetest.Attempt("oom/other", 1, 1, "b"))
	if res.Decision != "" {
		t.Errorf("Begin out of memory decided %s", res.Decision)
	}
	redisError(t, "Begin out of memory", err)
	if after := dump(t, a, "oom"); len(after) != len(before) {
		t.Errorf("keys out of memory: %d before, %d after", len(before), len(after))
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("key %s changed by a refused call", k)
			}
		}
	}

	filled.Free(t)
	rc, err := s.Commit(ctx, storetest.Answer(in.Ref()))
	if err != nil {
		t.Fatalf("Commit once memory is freed: %v", err)
	}
	if rc.Seq != 1 {
		t.Errorf("receipt %+v", rc)
	}
	if got := begin(t, s, storetest.Attempt("oom/other", 1, 1, "b"), storetest.T0); got != store.DecisionProceed {
		t.Errorf("Begin once memory is freed: %s", got)
	}
	rec, err := s.Record(ctx, "oom/r")
	if err != nil || rec.LastSeq != 1 || rec.InFlight != nil {
		t.Errorf("record after the commit: %+v, %v", rec, err)
	}
}

// TestOpenRefusesEvictingServer: a server that may evict keys would
// forget highest fences, so Open refuses it unless AllowEviction is set;
// a server that hides its policy (CONFIG renamed away) is logged and
// accepted.
func TestOpenRefusesEvictingServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	s, err := Open(ctx, Options{Addr: srv.Addr()})
	if !errors.Is(err, ErrEvictionPolicy) || s != nil {
		t.Fatalf("Open on allkeys-lru: %v, want ErrEvictionPolicy", err)
	}
	if !strings.Contains(err.Error(), "allkeys-lru") {
		t.Errorf("error %q does not name the policy", err)
	}
	a := admin(t, srv)
	if err := a.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{Addr: srv.Addr()}); !errors.Is(err, ErrEvictionPolicy) {
		t.Errorf("Open on volatile-lru: %v, want ErrEvictionPolicy", err)
	}
	s, err = Open(ctx, Options{Addr: srv.Addr(), AllowEviction: true})
	if err != nil {
		t.Fatalf("Open with AllowEviction: %v", err)
	}
	_ = s.Close()
	if err := a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatalf("Open on noeviction: %v", err)
	}
	_ = s.Close()

	hidden := redistest.Start(t, "--rename-command", "CONFIG", "")
	var log bytes.Buffer
	s, err = Open(ctx, Options{Addr: hidden.Addr(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("Open without CONFIG: %v", err)
	}
	_ = s.Close()
	if !strings.Contains(log.String(), "maxmemory-policy") {
		t.Errorf("Open without CONFIG logged %q, want a warning about maxmemory-policy", log.String())
	}
}

// TestKilledBeforeExecWritesNothing kills the server (SIGKILL, fsync on
// every write) after a Begin's, then a Commit's, WATCHed reads and before
// their EXEC: each call fails with a Redis error, and after a restart it
// wrote nothing: no marker without its Begin, no receipt without the
// record's advance (and no advance without the receipt).
func TestKilledBeforeExecWritesNothing(t *testing.T) {
	srv := redistest.Start(t, durable...)
	s, hook := openHooked(t, srv, "kill")
	ctx := context.Background()
	in := storetest.Attempt("kill/r", 1, 1, "a")

	hook.arm(srv.Kill)
	res, err := s.Begin(ctx, in)
	if res.Decision != "" {
		t.Errorf("Begin killed before EXEC decided %s", res.Decision)
	}
	redisError(t, "Begin killed before EXEC", err)
	srv.Restart()
	if rec, err := s.Record(ctx, "kill/r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record after the killed Begin: %+v, %v; want none", rec, err)
	}
	if got := begin(t, s, in, storetest.T0); got != store.DecisionProceed {
		t.Fatalf("Begin after restart: %s", got)
	}

	hook.arm(srv.Kill)
	_, err = s.Commit(ctx, storetest.Answer(in.Ref()))
	redisError(t, "Commit killed before EXEC", err)
	srv.Restart()
	rec, err := s.Record(ctx, "kill/r")
	if err != nil {
		t.Fatal(err)
	}
	if rec.LastSeq != 0 || rec.InFlight == nil || rec.InFlight.Ref() != in.Ref() {
		t.Errorf("record after the killed Commit: %+v; want segment 1 still in flight", rec)
	}
	if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "kill/r", Fence: 1, Seq: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("receipt after the killed Commit: %v; want none", err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
		t.Fatalf("Commit after restart: %v", err)
	}
	srv.Restart() // the acknowledged commit is on disk
	rec, err = s.Record(ctx, "kill/r")
	if err != nil || rec.LastSeq != 1 || rec.InFlight != nil {
		t.Errorf("record after the commit and a restart: %+v, %v", rec, err)
	}
	if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "kill/r", Fence: 1, Seq: 1}); err != nil {
		t.Errorf("receipt after the commit and a restart: %v", err)
	}
	if got := begin(t, s, in, storetest.T0); got != store.DecisionReplay {
		t.Errorf("Begin of the committed segment: %s, want REPLAY", got)
	}
}

// TestReconnectsAfterRestart restarts the server on the same port under
// an open store: the store's client reconnects by itself, with no reopen.
func TestReconnectsAfterRestart(t *testing.T) {
	srv := redistest.Start(t, durable...)
	s, _ := openHooked(t, srv, "reconnect")
	ctx := context.Background()
	for seq := uint64(1); seq <= 3; seq++ {
		if seq > 1 {
			srv.Restart()
		}
		in := storetest.Attempt("reconnect/r", 1, seq, "p"+strconv.FormatUint(seq, 10))
		if got := begin(t, s, in, storetest.T0); got != store.DecisionProceed {
			t.Fatalf("Begin of segment %d after %d restarts: %s", seq, seq-1, got)
		}
		if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
			t.Fatalf("Commit of segment %d: %v", seq, err)
		}
	}
}
