package redis

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// TestCheckUsesTheWatermarkOfBeforeTheRead: another process's write
// announced while a read is on its way is no evidence that the read went
// back; only what was seen before the read was sent is.
func TestCheckUsesTheWatermarkOfBeforeTheRead(t *testing.T) {
	w := &watermark{}
	if err := w.check(w.snapshot(), registry.Meta{Revision: 5, IssuerEpoch: 2, PolicySeq: 1}, true); err != nil {
		t.Fatal(err)
	}
	seen := w.snapshot()
	// The read is sent; meanwhile another process commits revision 6 and
	// its announcement raises the watermark.
	w.heard("other 6 2 1 40")
	// The read was served before that commit: revision 5. No rollback.
	if err := w.check(seen, registry.Meta{Revision: 5, IssuerEpoch: 2, PolicySeq: 1}, true); err != nil {
		t.Fatalf("a read served before an announced write: %v", err)
	}
	if st := w.snapshot(); st.Revision != 6 || st.MaxFence != 40 {
		t.Fatalf("the watermark went back to %+v", st)
	}
	// A read below what was seen before it was sent is a rollback.
	for _, m := range []registry.Meta{{Revision: 4, IssuerEpoch: 2, PolicySeq: 1}, {Revision: 5, IssuerEpoch: 1, PolicySeq: 1}, {Revision: 5, IssuerEpoch: 2}} {
		if err := w.check(seen, m, true); !errors.Is(err, errRolledBack) {
			t.Errorf("read %+v after seeing %+v: %v, want errRolledBack", m, seen, err)
		}
	}
	if err := w.check(seen, registry.Meta{}, false); !errors.Is(err, errRolledBack) {
		t.Errorf("a missing meta after seeing revision 5: %v", err)
	}
	if err := (&watermark{}).check(watermarkState{}, registry.Meta{}, false); err != nil {
		t.Errorf("a missing meta on a new keyspace: %v", err)
	}
}
