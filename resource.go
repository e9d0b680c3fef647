package fencegate

import (
	"fmt"
	"strings"
)

// MaxResourceLen is the maximum length in bytes of a canonical resource ID.
const MaxResourceLen = 256

// ValidateResource checks a canonical resource ID, the one rule the
// registry, the sidecar's routes, the fenced store and the SDK share:
// 1..MaxResourceLen bytes of [A-Za-z0-9-_.:@~/], "/"-separated segments
// that are neither empty nor "." or "..". Such an ID is safe in logs,
// store keys, URLs and headers. Errors wrap ErrInvalidResource.
func ValidateResource(s string) error {
	if s == "" {
		return fmt.Errorf("%w: resource is empty", ErrInvalidResource)
	}
	if len(s) > MaxResourceLen {
		return fmt.Errorf("%w: resource is longer than %d bytes", ErrInvalidResource, MaxResourceLen)
	}
	for i := 0; i < len(s); i++ {
		if !resourceByte(s[i]) {
			return fmt.Errorf("%w: resource has a character outside [A-Za-z0-9-_.:@~/] at byte %d", ErrInvalidResource, i)
		}
	}
	for seg := range strings.SplitSeq(s, "/") { // no slice: every store call and request checks one
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: resource %q has an empty, \".\" or \"..\" segment", ErrInvalidResource, s)
		}
	}
	return nil
}

func resourceByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:@~/", c) >= 0
}
