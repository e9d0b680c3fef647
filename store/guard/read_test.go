package guard_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store/guard"
)

// writeFile writes a checkpoint file as the guard did.
func writeFile(t *testing.T, path string, format, schema string, cps map[string][]byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, _ := tx.CreateBucket([]byte("meta"))
		_ = meta.Put([]byte("format"), []byte(format))
		_ = meta.Put([]byte("schema"), []byte(schema))
		b, _ := tx.CreateBucket([]byte("checkpoints"))
		_, _ = tx.CreateBucket([]byte("lru"))
		for k, v := range cps {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	want := map[string]guard.Checkpoint{
		"acct/1": {Fence: 5, Seq: 2, Touched: 1},
		"acct/2": {Fence: 3, Seq: 1, UnknownFence: 3, UnknownSeq: 2, SawPause: true, Touched: 2},
	}
	raw := map[string][]byte{}
	for k, c := range want {
		raw[k] = c.Encode()
	}
	path := filepath.Join(dir, guard.FileName)
	writeFile(t, path, "fencegate.guard", "1", raw)
	got, err := guard.Read(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Read: %+v, %v", got, err)
	}
	if got, err := guard.Read(filepath.Join(dir, "none.db")); err != nil || got != nil {
		t.Fatalf("no file: %+v, %v", got, err)
	}
	for name, f := range map[string]func(p string){
		"format": func(p string) { writeFile(t, p, "other", "1", nil) },
		"schema": func(p string) { writeFile(t, p, "fencegate.guard", "2", nil) },
		"value":  func(p string) { writeFile(t, p, "fencegate.guard", "1", map[string][]byte{"r": []byte("short")}) },
	} {
		p := filepath.Join(dir, name+".db")
		f(p)
		if _, err := guard.Read(p); !errors.Is(err, guard.ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}

	jp := filepath.Join(dir, guard.JSONFileName)
	if err := os.WriteFile(jp, []byte(`{"version":1,"clock":2,"resources":{"acct/1":{"fence":7,"seq":1,"touched":2}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := guard.ReadJSON(jp)
	if err != nil || js["acct/1"].Fence != 7 {
		t.Fatalf("ReadJSON: %+v, %v", js, err)
	}
	if err := os.WriteFile(jp, []byte(`{"version":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.ReadJSON(jp); !errors.Is(err, guard.ErrCorrupt) {
		t.Fatalf("version 2: %v", err)
	}
	if m := guard.Merge(want["acct/1"], guard.Checkpoint{Fence: 7, Seq: 1, UnknownFence: 7, UnknownSeq: 2}); m.Fence != 7 || m.Seq != 1 || m.UnknownSeq != 2 {
		t.Fatalf("merge %+v", m)
	}
}
