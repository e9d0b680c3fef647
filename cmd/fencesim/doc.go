// Command fencesim runs the deterministic simulation of fencegate (package
// sim): the real registry, verifier, fenced store, sidecars and Go SDK in
// one process on a virtual clock, under faults and attacks, checked
// against an oracle; the 100,000-round gate is
//
//	go run ./cmd/fencesim --rounds 100000 --seed S
//
// It is a development gate, not part of what is deployed: the production
// binary (cmd/fencegate) does not link the simulation nor its test clock.
// Its last line is "gate: PASS" (exit 0) or "gate: FAIL <what>" (exit 1);
// bad flags exit 2.
package main
