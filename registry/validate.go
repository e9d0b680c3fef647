package registry

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// Limits on identifiers. Resource IDs, owners and request IDs are bounded
// and drawn from a small charset so they are safe in logs, keys, URLs and
// headers.
// The resource ID rule is the contract's: fencegate.ValidateResource.
const (
	MaxOwnerLen     = 512
	MaxRequestIDLen = 128
	MaxOpClassLen   = 64
)

func validName(kind, s string, maxLen int, extra string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidInput, kind)
	}
	if len(s) > maxLen {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidInput, kind, maxLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_."+extra, c) >= 0
		if !ok {
			return fmt.Errorf("%w: %s has a character outside [A-Za-z0-9-_.%s] at byte %d", ErrInvalidInput, kind, extra, i)
		}
	}
	return nil
}

// ValidateResource checks a canonical resource ID by the contract's one
// rule (fencegate.ValidateResource); errors wrap ErrInvalidInput.
func ValidateResource(s string) error {
	if err := fencegate.ValidateResource(s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return nil
}

// ValidateOwner checks a workload identity: a SPIFFE ID or a plain name,
// 1..512 bytes of [A-Za-z0-9-_.:/@].
func ValidateOwner(s string) error { return validName("owner", s, MaxOwnerLen, ":/@") }

// ValidateRequestID checks a client request ID: 1..128 bytes of [A-Za-z0-9-_.:].
func ValidateRequestID(s string) error { return validName("requestId", s, MaxRequestIDLen, ":") }

// ValidateOpClass checks an operation class: 1..64 bytes of [A-Za-z0-9-_.].
func ValidateOpClass(s string) error { return validName("opClass", s, MaxOpClassLen, "") }

func (in AcquireInput) validate() error {
	var errs []error
	for _, err := range []error{ValidateResource(in.Resource), ValidateOwner(in.Owner), ValidateRequestID(in.RequestID), ValidateOpClass(in.OpClass)} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if in.TTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: ttl must be at least 1ms", ErrInvalidInput))
	}
	if in.LeaseID == "" || in.GrantID == "" {
		errs = append(errs, fmt.Errorf("%w: lease and grant IDs are required", ErrInvalidInput))
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = strings.TrimPrefix(e.Error(), ErrInvalidInput.Error()+": ")
	}
	return fmt.Errorf("%w: %s", ErrInvalidInput, strings.Join(msgs, "; "))
}
