package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// MatchPolicy returns the policy that applies to resource: an exact
// pattern first, else the longest matching prefix pattern ("a/*"). A
// tombstone matches like a policy (it allows everything) so that the
// generation never goes back. No match gives the zero Policy (generation 0).
func MatchPolicy(ps []fencegate.Policy, resource string) fencegate.Policy {
	var best fencegate.Policy
	bestLen := -1
	for _, p := range ps {
		if p.Pattern == resource {
			return p
		}
		if prefix, ok := strings.CutSuffix(p.Pattern, "*"); ok && strings.HasPrefix(resource, prefix) && len(prefix) > bestLen {
			best, bestLen = p, len(prefix)
		}
	}
	return best
}

// PolicyAllowsOwner tells whether policy p lets owner act on its
// resources: its AllowedOwners (empty allows every owner; a tombstone, or
// no policy, allows every owner).
func PolicyAllowsOwner(p fencegate.Policy, owner string) error {
	if p.Deleted || len(p.AllowedOwners) == 0 || slices.ContainsFunc(p.AllowedOwners, func(a string) bool { return matchPattern(a, owner) }) {
		return nil
	}
	return fmt.Errorf("%w: owner %q is not allowed on %s", ErrPolicyDenied, owner, p.Pattern)
}

// CheckPolicy tells whether policy p allows this acquire.
func CheckPolicy(p fencegate.Policy, owner, opClass string, ttl time.Duration) error {
	if p.Deleted {
		return nil
	}
	if err := PolicyAllowsOwner(p, owner); err != nil {
		return err
	}
	if len(p.OpClasses) > 0 && !slices.Contains(p.OpClasses, opClass) {
		return fmt.Errorf("%w: operation class %q is not allowed on %s", ErrPolicyDenied, opClass, p.Pattern)
	}
	ttlMs := uint64(ttl.Milliseconds())
	if p.MinTTLMs > 0 && ttlMs < p.MinTTLMs {
		return fmt.Errorf("%w: ttl %dms below the policy's %dms", ErrPolicyDenied, ttlMs, p.MinTTLMs)
	}
	if p.MaxTTLMs > 0 && ttlMs > p.MaxTTLMs {
		return fmt.Errorf("%w: ttl %dms above the policy's %dms", ErrPolicyDenied, ttlMs, p.MaxTTLMs)
	}
	return nil
}

func matchPattern(pattern, s string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(s, prefix)
	}
	return pattern == s
}

// ValidatePolicy checks the fields of policy p.
func ValidatePolicy(p fencegate.Policy) error {
	var errs []string
	pat := strings.TrimSuffix(p.Pattern, "*")
	if p.Pattern == "*" {
		pat = ""
	} else if err := ValidateResource(strings.TrimSuffix(pat, "/")); err != nil {
		errs = append(errs, "pattern: "+err.Error())
	}
	for _, o := range p.AllowedOwners {
		if err := ValidateOwner(strings.TrimSuffix(o, "*")); err != nil {
			errs = append(errs, "allowedOwners: "+err.Error())
		}
	}
	for _, c := range p.OpClasses {
		if err := ValidateOpClass(c); err != nil {
			errs = append(errs, "opClasses: "+err.Error())
		}
	}
	if p.MaxTTLMs > 0 && p.MinTTLMs > p.MaxTTLMs {
		errs = append(errs, "minTtlMs is above maxTtlMs")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: policy: %s", ErrInvalidInput, strings.Join(errs, "; "))
	}
	return nil
}
