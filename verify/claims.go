package verify

import "github.com/fencegate/fencegate"

// Temporary spellings of the claim sets, schemas and lease states, which
// moved to package fencegate; removed once every caller says fencegate.
type (
	Grant  = fencegate.Grant
	Status = fencegate.Status
)

const (
	GrantSchema   = fencegate.GrantSchema
	StatusSchema  = fencegate.StatusSchema
	BundleSchema  = fencegate.BundleSchema
	MaxBundleKeys = fencegate.MaxBundleKeys
	StateHeld     = fencegate.StateHeld
	StateExpired  = fencegate.StateExpired
	StateReleased = fencegate.StateReleased
	StateRevoked  = fencegate.StateRevoked
)

// Digest is fencegate.Digest.
func Digest(token []byte) string { return fencegate.Digest(token) }
