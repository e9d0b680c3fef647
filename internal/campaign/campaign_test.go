package campaign

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
)

// allowedCodes is, per kind, the rejection codes its mutations may get. A
// code outside the list means a mutation was rejected for another reason
// than the one it tests (or the generator is wrong).
var allowedCodes = map[string][]fencegate.Code{
	"bitflip":           {fencegate.CodeGrantInvalid},
	"alg-none":          {fencegate.CodeGrantInvalid},
	"hs-confusion":      {fencegate.CodeGrantInvalid},
	"kid-swap":          {fencegate.CodeGrantInvalid},
	"strip-header":      {fencegate.CodeGrantInvalid},
	"payload-swap":      {fencegate.CodeGrantInvalid},
	"digest-swap":       {fencegate.CodeStatusStale, fencegate.CodeGrantInvalid},
	"wrong-resource":    {fencegate.CodeResourceMismatch, fencegate.CodeStatusStale, fencegate.CodeGrantInvalid},
	"wrong-owner":       {fencegate.CodeOwnerMismatch, fencegate.CodeGrantInvalid},
	"expired":           {fencegate.CodeStatusStale, fencegate.CodeGrantNotHeld},
	"revoked-epoch":     {fencegate.CodeEpochRevoked},
	"stale-policy":      {fencegate.CodePolicyMismatch},
	"not-held":          {fencegate.CodeGrantNotHeld, fencegate.CodeGrantInvalid},
	"truncation":        {fencegate.CodeGrantInvalid, fencegate.CodeGrantRequired, fencegate.CodeStatusStale},
	"duplicate-members": {fencegate.CodeGrantInvalid},
	"huge-numbers":      {fencegate.CodeGrantInvalid},
	"typ-confusion":     {fencegate.CodeGrantInvalid},
	"bad-lineage":       {fencegate.CodeGrantInvalid},
}

// allowedReasons narrows the kinds whose finer reason is known.
var allowedReasons = map[string][]error{
	"alg-none":          {verify.ErrAlgNotAllowed},
	"hs-confusion":      {verify.ErrAlgNotAllowed, verify.ErrBadSignature},
	"kid-swap":          {verify.ErrAlgNotAllowed, verify.ErrBadSignature, verify.ErrUnknownKid},
	"strip-header":      {verify.ErrAlgNotAllowed, verify.ErrUnknownKid, verify.ErrWrongSchema},
	"payload-swap":      {verify.ErrBadSignature},
	"duplicate-members": {verify.ErrDuplicateMember},
	"huge-numbers":      {verify.ErrClaimType, verify.ErrMalformed},
	"typ-confusion":     {verify.ErrWrongSchema, verify.ErrUnknownClaim},
	"bad-lineage":       {verify.ErrClaimType, verify.ErrEmptyClaim, verify.ErrUnknownClaim},
	"revoked-epoch":     {verify.ErrEpochRevoked},
	"stale-policy":      {verify.ErrPolicyMismatch},
	"expired":           {verify.ErrProofExpired, verify.ErrProofTooOld, verify.ErrProofFromFuture, verify.ErrGrantNotHeld},
}

func run(t *testing.T, cfg Config) Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestCampaignRejectsAll(t *testing.T) {
	var progress strings.Builder
	res := run(t, Config{N: testN, Seed: 1, Progress: &progress})
	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())

	if !res.Passed() || res.Accepted() != 0 || res.Panicked() != 0 {
		t.Errorf("campaign did not pass: %s", res.Verdict())
	}
	if res.Generated() != testN {
		t.Errorf("generated %d mutations, want %d", res.Generated(), testN)
	}
	if len(res.Kinds) != len(allowedCodes) || len(res.Kinds) < 14 {
		t.Fatalf("%d kinds run, want all %d (at least 14)", len(res.Kinds), len(allowedCodes))
	}
	for _, k := range res.Kinds {
		allowed, ok := allowedCodes[k.Name]
		if !ok {
			t.Errorf("kind %s has no row in allowedCodes", k.Name)
			continue
		}
		if k.Generated == 0 || k.RejectedTotal() == 0 {
			t.Errorf("kind %s: generated %d, rejected %d; want both > 0", k.Name, k.Generated, k.RejectedTotal())
		}
		if sum := k.RejectedTotal() + k.Equivalent + k.Accepted + k.Panicked; sum != k.Generated {
			t.Errorf("kind %s: outcomes add up to %d, generated %d", k.Name, sum, k.Generated)
		}
		for code, n := range k.Rejected {
			if !slices.Contains(allowed, code) {
				t.Errorf("kind %s: %d rejected with %s, want only %v", k.Name, n, code, allowed)
			}
		}
		if reasons, ok := allowedReasons[k.Name]; ok {
			for reason, n := range k.Reasons {
				if !slices.ContainsFunc(reasons, func(e error) bool { return e.Error() == reason }) {
					t.Errorf("kind %s: %d rejected for %q, want only %v", k.Name, n, reason, reasons)
				}
			}
		}
		// Only a bit flip or a cut can be the original in other bytes.
		if k.Equivalent > 0 && k.Name != "bitflip" && k.Name != "truncation" {
			t.Errorf("kind %s: %d equivalent mutations; its generator should always change something", k.Name, k.Equivalent)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(table.String()), "campaign: PASS (0 of "+strconv.Itoa(testN)+" accepted)") {
		t.Errorf("table does not end with the PASS line:\n%s", table.String())
	}
	if lines := strings.Count(progress.String(), "\n"); lines < 19 || lines > 21 {
		t.Errorf("%d progress lines, want one every 5%% (20):\n%s", lines, progress.String())
	}
}

func TestCampaignIsDeterministic(t *testing.T) {
	const n = detN
	a := run(t, Config{N: n, Seed: 42, Workers: 1})
	b := run(t, Config{N: n, Seed: 42, Workers: 3})
	c := run(t, Config{N: n, Seed: 43, Workers: 2})
	a.Elapsed, b.Elapsed, c.Elapsed = 0, 0, 0
	if !equalResults(a, b) {
		t.Errorf("same seed, different workers, different results:\n%+v\n%+v", a.Kinds, b.Kinds)
	}
	// A different seed draws other variants: the per-code counts differ.
	if equalResults(a, c) {
		t.Errorf("seeds 42 and 43 gave identical counts; the seed does not reach the generators")
	}
}

func equalResults(a, b Result) bool {
	if a.N != b.N || len(a.Kinds) != len(b.Kinds) || len(a.Examples) != len(b.Examples) {
		return false
	}
	for i := range a.Kinds {
		x, y := a.Kinds[i], b.Kinds[i]
		if x.Name != y.Name || x.Generated != y.Generated || x.Equivalent != y.Equivalent ||
			x.Accepted != y.Accepted || x.Panicked != y.Panicked ||
			!mapsEqual(x.Rejected, y.Rejected) || !mapsEqual(x.Reasons, y.Reasons) {
			return false
		}
	}
	return true
}

func mapsEqual[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestOriginalsAreAccepted(t *testing.T) {
	f, err := NewFixture(1)
	if err != nil {
		t.Fatal(err)
	}
	orig := f.Originals()
	if len(orig) < 2 {
		t.Fatalf("%d originals", len(orig))
	}
	for i, o := range orig {
		if err := f.Sidecar().Check(o); err != nil {
			t.Errorf("original %d rejected: %v", i, err)
		}
		// And the checks are the real ones: the same grant on another
		// route, or without its proof, is refused.
		wrong := o
		wrong.Resource += "x"
		if code, _ := codeOf(f.Sidecar().Check(wrong)); code != fencegate.CodeResourceMismatch {
			t.Errorf("original %d on another route: %s, want RESOURCE_MISMATCH", i, code)
		}
		noProof := o
		noProof.Proof = nil
		if code, _ := codeOf(f.Sidecar().Check(noProof)); code != fencegate.CodeStatusStale {
			t.Errorf("original %d without a proof: %s, want STATUS_STALE", i, code)
		}
	}
}

func TestPaddingBitFlipIsEquivalent(t *testing.T) {
	f, err := NewFixture(1)
	if err != nil {
		t.Fatal(err)
	}
	o := f.originals[0]
	// A 64-byte Ed25519 signature is 86 base64url characters: the last one
	// carries 4 padding bits. Flipping its lowest bit keeps the bytes.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	g := clone(o.Grant)
	last := strings.IndexByte(alphabet, g[len(g)-1])
	g[len(g)-1] = alphabet[last^1] // the lowest of the 6 bits is padding
	m := mutation{Tuple: Tuple{Grant: g, Proof: o.Proof, Resource: o.Resource, Owner: o.Owner}, base: o}
	if !m.equivalent() {
		t.Fatalf("a padding-bit flip is not detected as equivalent")
	}
	if f.Sidecar().Check(m.Tuple) == nil {
		t.Errorf("verify accepted non-canonical base64url")
	}
	// A flip of a data bit is not equivalent.
	g[len(g)-1] = alphabet[last]
	g[len(g)-2] = alphabet[strings.IndexByte(alphabet, g[len(g)-2])^1]
	m.Grant = g
	if m.equivalent() {
		t.Errorf("a data-bit flip is counted as equivalent")
	}
}

func TestEveryKindChangesTheTuple(t *testing.T) {
	f, err := NewFixture(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(Kinds()) < 14 {
		t.Fatalf("%d kinds, want at least 14", len(Kinds()))
	}
	for _, name := range []string{"bitflip", "alg-none", "hs-confusion", "kid-swap", "strip-header", "payload-swap",
		"digest-swap", "wrong-resource", "expired", "revoked-epoch", "stale-policy", "truncation",
		"duplicate-members", "huge-numbers", "typ-confusion", "wrong-owner"} {
		if About(name) == "" {
			t.Errorf("kind %s is missing", name)
		}
	}
	for _, k := range kinds {
		for i := range 200 {
			m := k.gen(f, newRand(7, uint64(i)))
			if m.base == nil || m.variant == "" {
				t.Fatalf("%s: mutation without base or variant", k.name)
			}
			o := m.base
			if m.Resource == o.Resource && m.Owner == o.Owner && string(m.Grant) == string(o.Grant) && string(m.Proof) == string(o.Proof) {
				t.Errorf("%s (%s): mutation %d is the original, byte for byte", k.name, m.variant, i)
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Run(ctx, Config{N: 0}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("N 0: %v, want ErrBadConfig", err)
	}
	if _, err := Run(ctx, Config{N: 1, Workers: -1}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Workers -1: %v, want ErrBadConfig", err)
	}
	if _, err := Run(ctx, Config{N: 1, Kinds: []string{"bitflip", "nope"}}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v, want ErrUnknownKind", err)
	}
	if _, err := Run(ctx, Config{N: 1, Kinds: []string{"bitflip", "bitflip"}}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("repeated kind: %v, want ErrUnknownKind", err)
	}
	// A checker that refuses everything would "pass" any campaign: refused.
	if _, err := Run(ctx, Config{N: 1, Checker: checkerFunc(func(Tuple) error { return errors.New("no") })}); !errors.Is(err, ErrFixture) {
		t.Errorf("checker rejecting the originals: %v, want ErrFixture", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if res, err := Run(cctx, Config{N: 1000}); !errors.Is(err, context.Canceled) || res.Passed() {
		t.Errorf("cancelled run: %v, passed %v; want context.Canceled and no pass", err, res.Passed())
	}
}

func TestKindsSelection(t *testing.T) {
	res := run(t, Config{N: 100, Seed: 1, Kinds: []string{"stale-policy", "alg-none"}})
	if len(res.Kinds) != 2 || res.Kinds[0].Name != "alg-none" || res.Kinds[1].Name != "stale-policy" {
		t.Fatalf("rows %+v, want alg-none and stale-policy in table order", res.Kinds)
	}
	if res.Kind("alg-none").Generated != 50 || res.Kind("stale-policy").Rejected[fencegate.CodePolicyMismatch] != 50 {
		t.Errorf("counts %+v", res.Kinds)
	}
}

type checkerFunc func(Tuple) error

func (c checkerFunc) Check(t Tuple) error { return c(t) }

func newRand(seed, i uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, i)) }
