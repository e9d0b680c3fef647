package guard

import (
	"os"
	"path/filepath"
	"testing"
)

// The checkpoint value decoder and the JSON file reader take what a file
// on the pod holds: no panic, and a decoded value encodes back the same.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(Checkpoint{Fence: 5, Seq: 2, Touched: 1}.Encode())
	f.Add(Checkpoint{Fence: 3, Seq: 1, UnknownFence: 3, UnknownSeq: 2, SawPause: true}.Encode())
	f.Add([]byte{})
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err == nil && string(c.Encode()) != string(b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, c, c.Encode())
		}
	})
}

func FuzzReadJSON(f *testing.F) {
	f.Add([]byte(`{"version":1,"clock":2,"resources":{"acct/1":{"fence":7,"seq":1,"touched":2}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`nul`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), JSONFileName)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = ReadJSON(p)
	})
}
