// Package fencegate is the contract every part of fencegate shares: the
// registry, the sidecar (package proxy), the fenced store, the verifier
// and the worker SDK (package client) all spell it from here, and nowhere
// else.
//
// It holds, with the standard library only:
//
//   - the stable problem codes (Code) and the one table of their HTTP
//     statuses (Code.Status); a Code is an error, the sentinel of its
//     code, so errors.Is(err, CodeStaleOwner) works on the SDK's and
//     verify's errors;
//   - the claim sets of grants and status proofs (Grant, Status), the
//     schema names of the tokens (GrantSchema, StatusSchema,
//     BundleSchema) and the lease states (StateHeld, StateExpired,
//     StateReleased, StateRevoked);
//   - the header names of the request contract (HeaderGrant,
//     HeaderSegment, ...);
//   - segment numbers and operation IDs (ParseSegment, MaxSeq,
//     OperationID, ParseOperationID);
//   - the digest format of grants, payloads and operation roots
//     ("sha256:" + 64 lowercase hex digits: Digest, ValidateDigest);
//   - the one rule for canonical resource IDs (ValidateResource);
//   - the RFC 9457 problem document (Problem, WriteProblem, ReadProblem);
//   - the registry's JSON wire types (Lease, AcquireBody, Resource,
//     Policy, ...) and the sidecar's receipt wire type (Receipt);
//   - the names of the signing algorithms (Algorithms, DefaultAlgorithms);
//     package verify does the verifying.
//
// Importing it costs a program nothing beyond the standard library: a
// worker that imports the SDK does not compile the registry or the sidecar.
package fencegate
