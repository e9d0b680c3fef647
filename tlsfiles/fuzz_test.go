package tlsfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReloadKeepsLastGood: whatever the files become (any bytes, or
// gone), a check neither panics nor drops the material: it is the last
// good one unless the new files loaded whole.
func FuzzReloadKeepsLastGood(f *testing.F) {
	good := map[string][]byte{}
	for _, n := range []string{"tls.crt", "tls.key", "ca.crt"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		good[n] = b
	}
	f.Add(good["tls.crt"], good["tls.key"], good["ca.crt"], uint8(0))
	f.Add(good["tls.crt"][:100], good["tls.key"], good["ca.crt"], uint8(0))
	f.Add([]byte("garbage"), []byte{}, []byte("-----BEGIN CERTIFICATE-----\n"), uint8(7))
	f.Fuzz(func(t *testing.T, cert, key, ca []byte, gone uint8) {
		dir := t.TempDir()
		fs := fileSet{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), ca: filepath.Join(dir, "ca.crt")}
		for n, b := range good {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		rl, err := newReloader(fs, Reload{Interval: -1, OnError: func(error) {}})
		if err != nil {
			t.Fatal(err)
		}
		old := rl.cur.Load()
		for i, p := range []struct {
			path string
			data []byte
		}{{fs.cert, cert}, {fs.key, key}, {fs.ca, ca}} {
			if gone&(1<<i) != 0 {
				_ = os.Remove(p.path)
			} else if err := os.WriteFile(p.path, p.data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, loadErr := fs.load()
		m := rl.get()
		if m == nil || m.cert == nil || m.pool == nil {
			t.Fatalf("a check dropped the material: %+v", m)
		}
		if loadErr != nil && m != old {
			t.Fatalf("files that do not load (%v) replaced the material", loadErr)
		}
	})
}
