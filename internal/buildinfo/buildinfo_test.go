package buildinfo

import (
	"runtime"
	"testing"
)

// TestReadStamped: the link-time version and revision come back from Read
// (a test binary records no VCS revision, so the stamped one is used).
func TestReadStamped(t *testing.T) {
	oldV, oldR := version, revision
	t.Cleanup(func() { version, revision = oldV, oldR })
	version, revision = "v1.2.3", "0123abcd"
	in := Read()
	if in.Version != "v1.2.3" || in.Revision != "0123abcd" || in.GoVersion != runtime.Version() {
		t.Errorf("Read() = %+v, want v1.2.3, 0123abcd, %s", in, runtime.Version())
	}
}

func TestReadUnstamped(t *testing.T) {
	oldR := revision
	t.Cleanup(func() { revision = oldR })
	revision = ""
	if in := Read(); in.Revision != "unknown" || in.Version == "" {
		t.Errorf("Read() = %+v, want revision unknown and a version", in)
	}
}
