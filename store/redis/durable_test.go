package redis

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
)

// TestOpenRefusesNonDurableServer: a server that can acknowledge a Begin
// or a Commit and lose it would forget a highest fence after a restart,
// so Open refuses it unless AllowNonDurable; the durable settings set
// with CONFIG SET are then accepted, and a server that hides CONFIG is
// logged and accepted.
func TestOpenRefusesNonDurableServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "--appendonly", "no")
	s, err := Open(ctx, Options{Addr: srv.Addr()})
	if !errors.Is(err, ErrNotDurable) || s != nil {
		t.Fatalf("Open on appendonly no: %v, want ErrNotDurable", err)
	}
	for _, want := range []string{"appendonly no", "allowNonDurable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	a := admin(t, srv)
	for _, kv := range [][2]string{{"appendonly", "yes"}, {"appendfsync", "no"}} {
		if err := a.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, Options{Addr: srv.Addr()}); !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "appendfsync no") {
		t.Errorf("Open on appendfsync no: %v, want ErrNotDurable naming it", err)
	}
	var allowed bytes.Buffer
	s, err = Open(ctx, Options{Addr: srv.Addr(), AllowNonDurable: true, Logger: slog.New(slog.NewTextHandler(&allowed, nil))})
	if err != nil {
		t.Fatalf("Open with AllowNonDurable: %v", err)
	}
	_ = s.Close()
	wantNonDurableWarning(t, allowed.String(), "appendfsync no")
	if err := a.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	var durable bytes.Buffer
	s, err = Open(ctx, Options{Addr: srv.Addr(), AllowNonDurable: true, Logger: slog.New(slog.NewTextHandler(&durable, nil))})
	if err != nil {
		t.Fatalf("Open on appendonly yes, appendfsync always: %v", err)
	}
	_ = s.Close()
	if strings.Contains(durable.String(), "allowNonDurable") {
		t.Errorf("Open on a durable server warned %q", durable.String())
	}

	hidden := redistest.Start(t, "--rename-command", "CONFIG", "")
	var log bytes.Buffer
	s, err = Open(ctx, Options{Addr: hidden.Addr(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("Open without CONFIG: %v", err)
	}
	_ = s.Close()
	if !strings.Contains(log.String(), "appendfsync") {
		t.Errorf("Open without CONFIG logged %q, want a warning about appendfsync", log.String())
	}
}

// wantNonDurableWarning asserts that log holds one warning that a server
// reporting reported was accepted only because allowNonDurable is set.
func wantNonDurableWarning(t *testing.T, log, reported string) {
	t.Helper()
	if strings.Count(log, "level=WARN") != 1 || !strings.Contains(log, reported) || !strings.Contains(log, "allowNonDurable") {
		t.Errorf("Open with AllowNonDurable on a server with %s logged %q, want one warning naming it and allowNonDurable", reported, log)
	}
}
