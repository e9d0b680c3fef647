package fencegate

// Grant is the claim set of a lockGrant.v1 token (GrantSchema). Every
// field is required but Lineage. Integers are unsigned 64-bit and are
// decoded exactly (never through float64), so fence tokens above 2^53
// survive a round trip. Times are Unix milliseconds. Package verify
// decodes and checks it; the registry issues it.
type Grant struct {
	Schema           string `json:"schema"`
	Issuer           string `json:"iss"`
	GrantID          string `json:"grantId"`
	Resource         string `json:"resource"`
	Owner            string `json:"owner"`
	RequestID        string `json:"requestId"`
	Lease            string `json:"lease"`
	OperationRoot    string `json:"operationRoot"`
	FenceToken       uint64 `json:"fenceToken"`
	BackendRevision  uint64 `json:"backendRevision"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	IssuerEpoch      uint64 `json:"issuerEpoch"`
	TTLMs            uint64 `json:"ttlMs"`
	OpClass          string `json:"opClass"`
	IssuedAt         uint64 `json:"iat"`
	// Lineage is the issuing registry's issuer lineage (see
	// ValidateLineage), the only optional claim: "" when the grant has
	// none (a registry older than the claim). The registry always issues
	// it.
	Lineage string `json:"lineage,omitempty"`
}

// Status is the claim set of a lockStatus.v1 proof (StatusSchema): a
// short-lived, signed statement of a grant's state (one of the State*
// lease states). ExpiresAt never passes the lease's expiry.
// PolicyGeneration and IssuerEpoch are the registry's current values for
// the resource at IssuedAt, not the grant's. GrantDigest is the Digest of
// the grant's token.
type Status struct {
	Schema           string `json:"schema"`
	Issuer           string `json:"iss"`
	GrantDigest      string `json:"grantDigest"`
	Resource         string `json:"resource"`
	Lease            string `json:"lease"`
	FenceToken       uint64 `json:"fenceToken"`
	State            string `json:"state"`
	BackendRevision  uint64 `json:"backendRevision"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	IssuerEpoch      uint64 `json:"issuerEpoch"`
	IssuedAt         uint64 `json:"iat"`
	ExpiresAt        uint64 `json:"exp"`
}
