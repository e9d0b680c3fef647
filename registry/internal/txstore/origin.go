package txstore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// NewOrigin returns a random ID marking a Store's own wake-ups, which its
// subscription skips (its registry already woke its waiters); name
// prefixes its error ("registry/etcd").
func NewOrigin(name string) (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("%s: origin ID: %w", name, err)
	}
	return hex.EncodeToString(b), nil
}
