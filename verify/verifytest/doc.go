// Package verifytest provides test helpers for code that consumes package
// verify: an Issuer with a real signing key (package keys), trust bundles,
// realistic valid grants and status proofs, and raw signing for malformed
// tokens. It is for tests only; every helper fails the test on error.
//
// An Issuer reports failures to the testing.TB it was made with, so use it
// from that test's goroutine; inside a fuzz target (where the TB is the
// *testing.F) sign through Issuer.Signer instead.
package verifytest
