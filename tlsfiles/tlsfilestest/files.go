package tlsfilestest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// mtimes gives every write in place its own modification time: a real
// rotation comes long after the previous one, while two writes of a test
// can share one tick of the filesystem's clock.
var mtimes atomic.Int64

// WriteInPlace rewrites path (the same inode) and gives it a modification
// time no other write of the process had.
func WriteInPlace(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000+mtimes.Add(1), 0)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// Files are the paths of a certificate, its key and a CA file.
type Files struct{ Cert, Key, CA string }

// WriteFiles writes tls.crt, tls.key (from l, unless its CertPEM is nil)
// and ca.crt (caPEM, unless nil) in dir.
func WriteFiles(t testing.TB, dir string, l Leaf, caPEM []byte) Files {
	t.Helper()
	f := Files{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
	f.Write(t, l, caPEM)
	return f
}

// Write rewrites the files in place: the certificate and key unless
// l.CertPEM is nil, the CA file unless caPEM is nil.
func (f Files) Write(t testing.TB, l Leaf, caPEM []byte) {
	t.Helper()
	if l.CertPEM != nil {
		WriteInPlace(t, f.Cert, l.CertPEM)
		WriteInPlace(t, f.Key, l.KeyPEM)
	}
	if caPEM != nil {
		WriteInPlace(t, f.CA, caPEM)
	}
}

// SecretVolume is a directory laid out like a Kubernetes Secret volume:
// tls.crt -> ..data/tls.crt (and tls.key, ca.crt), ..data -> ..v<n>.
type SecretVolume struct {
	dir     string
	version int
}

// NewSecretVolume makes a volume holding l and caPEM in a new temp dir.
func NewSecretVolume(t testing.TB, l Leaf, caPEM []byte) *SecretVolume {
	t.Helper()
	v := &SecretVolume{dir: t.TempDir()}
	v.Swap(t, l, caPEM)
	for _, name := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// Files are the volume's paths, the symlinks a process is configured with.
func (v *SecretVolume) Files() Files {
	return Files{filepath.Join(v.dir, "tls.crt"), filepath.Join(v.dir, "tls.key"), filepath.Join(v.dir, "ca.crt")}
}

// Swap writes a new version directory, swaps ..data to it atomically
// (rename of a new symlink) and removes the old version, as the kubelet
// does.
func (v *SecretVolume) Swap(t testing.TB, l Leaf, caPEM []byte) {
	t.Helper()
	old := filepath.Join(v.dir, "..v"+strconv.Itoa(v.version))
	v.version++
	ver := filepath.Join(v.dir, "..v"+strconv.Itoa(v.version))
	if err := os.Mkdir(ver, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": l.CertPEM, "tls.key": l.KeyPEM, "ca.crt": caPEM} {
		if err := os.WriteFile(filepath.Join(ver, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ver), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if v.version > 1 {
		if err := os.RemoveAll(old); err != nil {
			t.Fatal(err)
		}
	}
}
