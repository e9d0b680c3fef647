package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/storetest"
)

// The upgrade from a sidecar that kept its Redis generation and its
// checkpoints in dataDir: the recorded generation is registered first, so
// a Redis that lost data before the upgrade (its marker is another) is
// caught; the checkpoints are compared with the store (a fence it forgot
// pauses the resource); both files are renamed with guard.UpgradedSuffix
// once taken into account, and a restart does not read them again.
func TestUpgradeFromLocalFiles(t *testing.T) {
	srv := redistest.Start(t)
	regURL, bundle := startRegistry(t)
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Trust.Bundle, cfg.Registry.URL = bundle, regURL
	cfg.Store = StoreConfig{Backend: "redis", Service: "upgrade", Identity: "sidecar", Redis: RedisStoreConfig{Addr: srv.Addr(), Prefix: "up"}}
	cfg.SetDefaults()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(cfg.DataDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// Before the upgrade this sidecar saw another data set: Redis lost data.
	write(redisGenerationFile, `{"generation":"seenbeforetheupgrade"}`)
	s, err := New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.Begin(context.Background(), storetest.Attempt("item/1", 1, 1, "p")); !errors.Is(err, anchor.ErrStoreLost) {
		t.Fatalf("begin after the upgrade on a Redis that lost data: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, redisGenerationFile)); err != nil {
		t.Fatalf("the generation file is gone before the store was writable: %v", err)
	}
	closeUnrun(s)

	// Another service, same Redis data set: the recorded generation is the
	// marker; a checkpoint shows a fence the store never saw.
	cfg.Store.Service, cfg.Store.Redis.Prefix = "upgrade2", "up2"
	st, err := openStore(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	gen, err := st.Generation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	write(redisGenerationFile, `{"generation":"`+gen+`"}`)
	write(guard.JSONFileName, `{"version":1,"clock":1,"resources":{"item/7":{"fence":9,"seq":2,"touched":1}}}`)
	s, err = New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeUnrun(s)
	rec, err := s.store.Record(context.Background(), "item/7")
	if err != nil || rec.Pause == nil || rec.Pause.Reason != store.PauseFenceRegression {
		t.Fatalf("item/7 after the upgrade: %+v, %v", rec, err)
	}
	for _, f := range []string{redisGenerationFile, guard.JSONFileName} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, f+guard.UpgradedSuffix)); err != nil {
			t.Errorf("%s not renamed: %v", f, err)
		}
	}
	mustWrite := storetest.Attempt("item/8", 1, 1, "p")
	if res, err := s.store.Begin(context.Background(), mustWrite); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("writes after the upgrade: %v %s", err, res.Decision)
	}
}

// closeUnrun closes what New opened of a Server that never ran.
func closeUnrun(s *Server) {
	_ = s.inLn.Close()
	_ = s.adminLn.Close()
	_ = s.healthLn.Close()
	_ = s.store.Close()
}
