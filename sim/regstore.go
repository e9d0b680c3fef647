package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/memory"
)

// registryStore is where a round's registry keeps its state, and how the
// round saves and restores it (events evSnapshot, evRestore):
// registry/memory (the default), or registry/etcd on a real etcd cluster
// (Options.Etcd).
type registryStore interface {
	// backend is the registry.Backend a registry of the round runs on.
	backend() registry.Backend
	// save copies the state, as a backup an operator could restore.
	save() error
	// putBack restores the last save.
	putBack() error
	// restores is how many restores the running registry met by itself
	// (registry/etcd's watermark: an epoch bump and a fence floor before
	// anything else is decided); 0 on registry/memory, which cannot see
	// one.
	restores() uint64
	close() error
}

// memRegistry is the registry on registry/memory, restored in place.
type memRegistry struct {
	s    *memory.Store
	snap *memory.Snapshot
}

func newMemRegistry() *memRegistry { return &memRegistry{s: memory.New()} }

func (m *memRegistry) backend() registry.Backend { return registry.NewTxBackend(m.s) }
func (m *memRegistry) save() error               { m.snap = m.s.Snapshot(); return nil }
func (m *memRegistry) close() error              { return nil }

func (m *memRegistry) restores() uint64 { return 0 }

func (m *memRegistry) putBack() error {
	if m.snap != nil {
		m.s.Restore(m.snap)
	}
	return nil
}

// etcdRun is a run's etcd cluster (Options.Etcd): its endpoints, the
// client that saves and restores the rounds' keyspaces, and the run's
// name, which keeps its keys apart from another run's.
type etcdRun struct {
	endpoints []string
	c         *clientv3.Client
	name      string
}

// etcdTimeout bounds one call of the simulation's own etcd client: a
// cluster that stops answering fails the run instead of hanging it.
const etcdTimeout = 30 * time.Second

func openEtcdRun(endpoints []string) (*etcdRun, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: %w", ErrSetup, err)
	}
	var b [6]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return &etcdRun{endpoints: endpoints, c: c, name: hex.EncodeToString(b[:])}, nil
}

func (e *etcdRun) close() error { return e.c.Close() }

// etcdRegistry is the registry on registry/etcd, in a keyspace of the
// round's own; a save is a copy of its keys (what etcdutl snapshot save
// holds of them), a restore puts exactly those keys back in one
// transaction, as etcdutl snapshot restore would, the cluster's revision
// moving on (as with --bump-revision).
type etcdRegistry struct {
	run    *etcdRun
	prefix string
	be     registry.Backend
	saved  map[string]string
	has    bool
}

func newEtcdRegistry(run *etcdRun, seed uint64) (*etcdRegistry, error) {
	e := &etcdRegistry{run: run, prefix: fmt.Sprintf("fgsim-%s-%016x", run.name, seed)}
	if err := e.clear(); err != nil {
		return nil, err
	}
	return e, e.restart()
}

func (e *etcdRegistry) backend() registry.Backend { return e.be }

// restart opens the keyspace again, as a registry process started anew
// on it (a fresh watermark).
func (e *etcdRegistry) restart() error {
	if e.be != nil {
		_ = e.be.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	// The recovery's log line is the history's "met the restore" line.
	quiet := slog.New(slog.DiscardHandler)
	be, err := etcd.OpenBackend(ctx, etcd.Options{Endpoints: e.run.endpoints, Prefix: e.prefix, Logger: quiet})
	if err != nil {
		return fmt.Errorf("%w: registry/etcd: %w", ErrSetup, err)
	}
	e.be = be
	return nil
}

func (e *etcdRegistry) save() error {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	res, err := e.run.c.Get(ctx, e.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("%w: etcd: save: %w", ErrSetup, err)
	}
	e.saved, e.has = map[string]string{}, true
	for _, kv := range res.Kvs {
		e.saved[string(kv.Key)] = string(kv.Value)
	}
	return nil
}

// restores is the running registry's count of restores it recovered
// from (registry/etcd's Restores).
func (e *etcdRegistry) restores() uint64 {
	if r, ok := e.be.(interface{ Restores() uint64 }); ok {
		return r.Restores()
	}
	return 0
}

// putBack deletes the keys written since the save and puts the saved ones
// back, in one transaction (etcd refuses a delete of the whole prefix and
// puts under it in one).
func (e *etcdRegistry) putBack() error {
	if !e.has {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	now, err := e.run.c.Get(ctx, e.prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("%w: etcd: restore: %w", ErrSetup, err)
	}
	var ops []clientv3.Op
	for _, kv := range now.Kvs {
		if _, ok := e.saved[string(kv.Key)]; !ok {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	for k, v := range e.saved {
		ops = append(ops, clientv3.OpPut(k, v))
	}
	if _, err := e.run.c.Txn(ctx).Then(ops...).Commit(); err != nil {
		return fmt.Errorf("%w: etcd: restore: %w", ErrSetup, err)
	}
	return nil
}

// clear deletes the round's keyspace.
func (e *etcdRegistry) clear() error {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	if _, err := e.run.c.Delete(ctx, e.prefix+"/", clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("%w: etcd: %w", ErrSetup, err)
	}
	return nil
}

func (e *etcdRegistry) close() error {
	var err error
	if e.be != nil {
		err = e.be.Close()
	}
	if cerr := e.clear(); err == nil {
		err = cerr
	}
	return err
}

// newRegistryStoreOf is a round's registry store: on the run's etcd
// cluster when it has one, else registry/memory.
func newRegistryStoreOf(m *materials, seed uint64) (registryStore, error) {
	if m.etcd != nil {
		return newEtcdRegistry(m.etcd, seed)
	}
	return newMemRegistry(), nil
}

// fail records the first failure of the simulation itself (r.err): the
// round runs on, its result unused.
func (r *round) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
