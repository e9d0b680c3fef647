package redis_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry/redis"
)

// TestOpenRefusesNonDurableServer: a server that can acknowledge a grant
// and lose it (no append-only file, or one fsynced every second) could
// issue its fence again after a restart, so Open refuses it, writing
// nothing, unless AllowNonDurable; CONFIG SET to the durable settings is
// then accepted, and a server that hides CONFIG is logged and accepted.
func TestOpenRefusesNonDurableServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "--appendonly", "no")
	s, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()})
	if !errors.Is(err, redis.ErrNotDurable) || s != nil {
		t.Fatalf("Open on appendonly no: %v, want ErrNotDurable", err)
	}
	for _, want := range []string{"appendonly no", "allowNonDurable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	a := raw(t, srv)
	if n, err := a.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("a refused Open wrote %d keys (%v)", n, err)
	}
	if err := a.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.ConfigSet(ctx, "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()}); !errors.Is(err, redis.ErrNotDurable) || !strings.Contains(err.Error(), "appendfsync everysec") {
		t.Errorf("Open on appendfsync everysec: %v, want ErrNotDurable naming it", err)
	}
	var allowed bytes.Buffer
	if s, err = redis.Open(ctx, redis.Options{Addr: srv.Addr(), AllowNonDurable: true, Logger: slog.New(slog.NewTextHandler(&allowed, nil))}); err != nil {
		t.Fatalf("Open with AllowNonDurable: %v", err)
	}
	s.Close()
	if l := allowed.String(); strings.Count(l, "level=WARN") != 1 || !strings.Contains(l, "appendfsync everysec") || !strings.Contains(l, "allowNonDurable") {
		t.Errorf("Open with AllowNonDurable on appendfsync everysec logged %q, want one warning naming it and allowNonDurable", l)
	}
	if err := a.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	var durable bytes.Buffer
	if s, err = redis.Open(ctx, redis.Options{Addr: srv.Addr(), AllowNonDurable: true, Logger: slog.New(slog.NewTextHandler(&durable, nil))}); err != nil {
		t.Fatalf("Open on appendonly yes, appendfsync always: %v", err)
	}
	s.Close()
	if strings.Contains(durable.String(), "allowNonDurable") {
		t.Errorf("Open on a durable server warned %q", durable.String())
	}

	hidden := redistest.Start(t, "--rename-command", "CONFIG", "")
	var log bytes.Buffer
	s, err = redis.Open(ctx, redis.Options{Addr: hidden.Addr(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("Open without CONFIG: %v", err)
	}
	s.Close()
	if !strings.Contains(log.String(), "appendfsync") {
		t.Errorf("Open without CONFIG logged %q, want a warning about appendfsync", log.String())
	}
}
