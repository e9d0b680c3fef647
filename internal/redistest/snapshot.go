package redistest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dataFiles are the names, in a Server's directory, of what redis-server
// persists: the RDB and the (Redis 7 multi-part) AOF directory.
var dataFiles = []string{"dump.rdb", "appendonlydir", "appendonly.aof"}

// Snapshot is a copy of a Server's data files taken at one moment, as a
// backup an operator could restore.
type Snapshot struct{ dir string }

// Snapshot copies the server's data files (RDB and AOF) as they are now
// on disk into a new temporary directory. With --appendfsync always every
// acknowledged write is in them; take the snapshot between writes.
func (s *Server) Snapshot() *Snapshot {
	s.tb.Helper()
	snap := &Snapshot{dir: s.tb.TempDir()}
	for _, name := range dataFiles {
		if err := copyTree(filepath.Join(s.dir, name), filepath.Join(snap.dir, name)); err != nil {
			s.tb.Fatalf("redistest: snapshot: %v", err)
		}
	}
	return snap
}

// RestoreSnapshot kills the server, replaces its data files by snap's and
// starts it again on the same port: the server comes back with the data
// of the snapshot, as after an operator's restore from a backup.
func (s *Server) RestoreSnapshot(snap *Snapshot) {
	s.tb.Helper()
	s.Kill()
	for _, name := range dataFiles {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			s.tb.Fatalf("redistest: restore: %v", err)
		}
		if err := copyTree(filepath.Join(snap.dir, name), filepath.Join(s.dir, name)); err != nil {
			s.tb.Fatalf("redistest: restore: %v", err)
		}
	}
	if err := s.start(); err != nil {
		s.tb.Fatalf("redistest: restore: %v", err)
	}
}

// Wipe kills the server, deletes its data files (RDB and AOF) and starts
// it again on the same port: it comes back empty, as a Redis whose volume
// was lost or that ran without persistence.
func (s *Server) Wipe() {
	s.tb.Helper()
	s.Kill()
	for _, name := range dataFiles {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			s.tb.Fatalf("redistest: wipe: %v", err)
		}
	}
	if err := s.start(); err != nil {
		s.tb.Fatalf("redistest: wipe: %v", err)
	}
}

// copyTree copies a file or a directory tree; a missing src copies nothing.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("redistest: copy %s: %w", path, err)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return fmt.Errorf("redistest: copy %s: %w", path, err)
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return fmt.Errorf("redistest: copy %s: %w", path, err)
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("redistest: copy %s: %w", path, err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return fmt.Errorf("redistest: copy %s: %w", path, err)
		}
		return nil
	})
}
