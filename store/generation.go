package store

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/fencegate/fencegate"
)

// NewGeneration returns a new random store generation: 32 lowercase hex
// digits (128 bits from crypto/rand).
func NewGeneration() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return hex.EncodeToString(b)
}

// ValidateGeneration checks a store generation as an *InputError of
// "generation": 1..fencegate.MaxGenerationLen bytes of [0-9a-z].
func ValidateGeneration(g string) error {
	if g == "" || len(g) > fencegate.MaxGenerationLen {
		return invalid("generation", "want 1.."+strconv.Itoa(fencegate.MaxGenerationLen)+" bytes")
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return invalid("generation", "want [0-9a-z]")
		}
	}
	return nil
}
