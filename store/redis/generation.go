package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/atomicfile"
	"github.com/fencegate/fencegate/store"
)

// ErrGenerationChanged is returned (wrapped) by every call of a store whose
// Redis lost its data: the generation marker is missing or is not the one
// this sidecar recorded. It wraps none of the store's sentinel errors, so
// the proxy answers STORE_UNAVAILABLE; it lasts until an operator
// acknowledges (Options.AcknowledgeGenerationChange, or
// AcknowledgeGeneration).
var ErrGenerationChanged = errors.New("store/redis: the Redis store lost data (its generation marker changed)")

// genFile is the local generation file's JSON shape.
type genFile struct {
	Generation string `json:"generation"`
}

// checkGeneration compares the marker read from Redis (nil: missing) with
// the one expected and, on a mismatch, fails the store closed.
func (s *Store) checkGeneration(got []byte, expected string) error {
	return s.gen.Check(string(got), got != nil, expected, lossError)
}

// lossError is the loss of a store that expected the marker want and
// read got (ok false: none).
func lossError(got string, ok bool, want string) error {
	if !ok {
		return fmt.Errorf("%w: marker missing, want %s (Redis restarted empty or was flushed)", ErrGenerationChanged, want)
	}
	return fmt.Errorf("%w: marker %q, want %s (another data set)", ErrGenerationChanged, got, want)
}

// GenerationLoss returns the loss detected (wrapping ErrGenerationChanged),
// or nil while the store trusts its Redis.
func (s *Store) GenerationLoss() error { return s.gen.Loss() }

// ExpectedGeneration returns the generation marker the store expects (""
// when generation checks are off).
func (s *Store) ExpectedGeneration() string {
	g, _ := s.gen.Expected()
	return g
}

// Generation implements store.Store: Redis's generation marker P:gen,
// created (SET NX, a store.NewGeneration) when it is missing, as in an
// empty or flushed Redis. It answers even while the store refuses calls
// for a loss (the marker is what an operator acknowledges); a marker of
// another shape is ErrCorrupt. Creating the marker anew does not hide a
// loss from a store that expects the old one: that store sees another
// marker and stays closed.
func (s *Store) Generation(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if s.closed.Load() {
		return "", store.ErrClosed
	}
	ctx = context.WithoutCancel(ctx)
	got, err := raw(s.c.Get(ctx, s.k.generation()), "read generation")
	if err != nil {
		return "", err
	}
	if got == nil {
		if err := s.c.SetNX(ctx, s.k.generation(), store.NewGeneration(), 0).Err(); err != nil {
			return "", wrap("write generation", err)
		}
		if got, err = raw(s.c.Get(ctx, s.k.generation()), "read generation"); err != nil {
			return "", err
		}
		if got == nil {
			return "", wrap("read generation", errors.New("marker vanished"))
		}
	}
	if err := store.ValidateGeneration(string(got)); err != nil {
		return "", fmt.Errorf("store/redis: generation marker %q: %v: %w", got, err, store.ErrCorrupt)
	}
	return string(got), nil
}

// ExpectGeneration makes gen the generation marker every later call must
// see (as Options.ExpectedGeneration does at Open), and reads the marker
// now: a missing or different one fails the store closed with
// ErrGenerationChanged, which is also returned; a matching one lifts an
// earlier loss. The sidecar calls it with the generation its outside
// anchor registered, after an operator acknowledged a loss there. It is
// refused when the store keeps a local generation file
// (Options.GenerationFile): that file is the expectation then.
func (s *Store) ExpectGeneration(ctx context.Context, gen string) error {
	if err := store.ValidateGeneration(gen); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if s.genPath != "" {
		return errors.New("store/redis: the generation is kept in a local generation file")
	}
	s.gen.Expect(gen)
	got, err := raw(s.c.Get(context.WithoutCancel(ctx), s.k.generation()), "read generation")
	if err != nil {
		return err
	}
	return s.checkGeneration(got, gen)
}

// initGeneration loads the local generation file at path and checks it
// against Redis's marker, creating the marker (SET NX) when neither
// exists. With ack, whatever marker Redis has (or a new one) is adopted
// and recorded: the operator's acknowledgement of a loss.
func (s *Store) initGeneration(ctx context.Context, path string, ack bool) error {
	local, err := readGenFile(path)
	if err != nil {
		return err
	}
	s.genPath = path
	if local != "" && !ack {
		got, err := raw(s.c.Get(ctx, s.k.generation()), "read generation")
		if err != nil {
			return err
		}
		s.gen.Expect(local)
		_ = s.checkGeneration(got, local) // a loss fails every call, not Open
		return nil
	}
	return s.AcknowledgeGeneration(ctx)
}

// AcknowledgeGeneration adopts Redis's current generation marker (writing
// a new one if it has none) as the expected one, records it in the local
// generation file and lets calls through again. It is the operator's
// acknowledgement that Redis lost data; the per-resource checkpoints of
// store/guard keep refusing fences below what was accepted before.
func (s *Store) AcknowledgeGeneration(ctx context.Context) error {
	path := s.genPath
	if path == "" {
		return errors.New("store/redis: generation checks are off (no generation file)")
	}
	if err := s.c.SetNX(ctx, s.k.generation(), store.NewGeneration(), 0).Err(); err != nil {
		return wrap("write generation", err)
	}
	got, err := raw(s.c.Get(ctx, s.k.generation()), "read generation")
	if err != nil {
		return err
	}
	if got == nil {
		return wrap("read generation", errors.New("marker vanished"))
	}
	if err := writeGenFile(path, string(got)); err != nil {
		return err
	}
	s.gen.Expect(string(got))
	return nil
}

// readGenFile returns the generation recorded at path, "" if none.
func readGenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store/redis: read generation file: %w", err)
	}
	var f genFile
	if err := json.Unmarshal(b, &f); err != nil || f.Generation == "" {
		return "", fmt.Errorf("store/redis: generation file %s is corrupt (remove it only to acknowledge a loss)", path)
	}
	return f.Generation, nil
}

// writeGenFile records gen at path durably (temporary file, fsync,
// rename, directory fsync).
func writeGenFile(path, gen string) error {
	b, _ := json.Marshal(genFile{Generation: gen})
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("store/redis: write generation file: %w", err)
	}
	return nil
}

// readGeneration queues the marker's GET in a pipeline when checks are on.
func (s *Store) readGeneration(ctx context.Context, p goredis.Pipeliner, expected string) *goredis.StringCmd {
	if expected == "" {
		return nil
	}
	return p.Get(ctx, s.k.generation())
}

// confirmGeneration checks the marker read by readGeneration.
func (s *Store) confirmGeneration(cmd *goredis.StringCmd, expected string) error {
	if cmd == nil {
		return nil
	}
	got, err := raw(cmd, "read generation")
	if err != nil {
		return err
	}
	return s.checkGeneration(got, expected)
}

// CheckGeneration reads Redis's marker now and returns the loss, if any,
// like a transition would: readiness probes call it, so a Redis that
// restarted empty shows before the next write is refused. A Redis error is
// returned as it is (the store is unreachable, not known to have lost data).
func (s *Store) CheckGeneration(ctx context.Context) error {
	expected, err := s.gen.Expected()
	if err != nil || expected == "" {
		return err
	}
	got, err := raw(s.c.Get(ctx, s.k.generation()), "read generation")
	if err != nil {
		return err
	}
	return s.checkGeneration(got, expected)
}
