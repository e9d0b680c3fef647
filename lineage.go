package fencegate

import (
	"errors"
	"fmt"
)

// The issuer lineage (docs/design.md, "lockGrant.v1" and "Registry
// restores"): a random ID the registry writes once, when it first starts
// on an empty data set, and never changes. Every grant it issues carries
// it as the "lineage" claim, so a sidecar can tell a registry that
// continued above the highest fence it accepted (a restore, a migration
// that took the floor along) from one that started over (a new or
// replaced registry on an empty data set): the fenced store remembers the
// lineage of each highest fence. A restore from a backup keeps the
// lineage of that backup.
//
// The claim is the only optional one of lockGrant.v1: grants of
// registries older than the claim lack it, and a sidecar must keep
// accepting them during an upgrade (sidecars and SDKs first).

// MaxLineageLen bounds an issuer lineage ID.
const MaxLineageLen = 64

// ErrInvalidLineage is wrapped by ValidateLineage's errors.
var ErrInvalidLineage = errors.New("fencegate: invalid issuer lineage")

// ValidateLineage checks an issuer lineage: 1..MaxLineageLen bytes of
// [0-9a-z] (the registry makes 32 lowercase hex digits).
func ValidateLineage(s string) error {
	if s == "" || len(s) > MaxLineageLen {
		return fmt.Errorf("%w: must be 1 to %d bytes, got %d", ErrInvalidLineage, MaxLineageLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return fmt.Errorf("%w: byte %d is %q (want [0-9a-z])", ErrInvalidLineage, i, c)
		}
	}
	return nil
}
