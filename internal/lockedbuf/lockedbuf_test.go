package lockedbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/internal/lockedbuf"
)

// TestConcurrentWritesAndReads: writers and a reader share the buffer
// (under -race), and every write is kept whole.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b lockedbuf.Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if s := b.String(); len(s) != 800 || strings.Count(s, "ab") != 400 {
		t.Fatalf("got %d bytes, %d writes whole", len(s), strings.Count(s, "ab"))
	}
}
