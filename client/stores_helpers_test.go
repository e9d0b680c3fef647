package client_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// encodeWithout decodes a base64url JSON object, drops member name and
// encodes it again.
func encodeWithout(t *testing.T, seg, name string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m[name]; !ok {
		t.Fatalf("no member %q in %s", name, raw)
	}
	delete(m, name)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(out)
}
