package keys

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
)

// SignBundle makes a signed trust bundle (fencegate.BundleSchema): a compact
// JWS signed by s whose payload is the JWK set with its schema, issue time
// iat and expiry exp (Unix milliseconds). A sidecar that has pinned s's
// key pins the set's other keys when it loads the bundle, if the bundle is
// newer than every signed bundle it took before and has not expired (see
// verify.ParseAndVerifySignedBundle and docs/design.md, trust rotation).
func SignBundle(s *Signer, set jwk.Set, iat, exp time.Time) ([]byte, error) {
	if set == nil || set.Len() == 0 {
		return nil, fmt.Errorf("keys: sign bundle: no keys")
	}
	if set.Len() > fencegate.MaxBundleKeys {
		return nil, fmt.Errorf("keys: sign bundle: %d keys, at most %d", set.Len(), fencegate.MaxBundleKeys)
	}
	if !exp.After(iat) || iat.UnixMilli() <= 0 {
		return nil, fmt.Errorf("keys: sign bundle: exp %s must be after iat %s", exp.Format(time.RFC3339), iat.Format(time.RFC3339))
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("keys: sign bundle: %w", err)
	}
	var ks struct {
		Keys json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(raw, &ks); err != nil {
		return nil, fmt.Errorf("keys: sign bundle: %w", err)
	}
	payload, err := json.Marshal(struct {
		Schema string          `json:"schema"`
		IAT    int64           `json:"iat"`
		EXP    int64           `json:"exp"`
		Keys   json.RawMessage `json:"keys"`
	}{fencegate.BundleSchema, iat.UnixMilli(), exp.UnixMilli(), ks.Keys})
	if err != nil {
		return nil, fmt.Errorf("keys: sign bundle: %w", err)
	}
	return s.SignPayload(fencegate.BundleSchema, payload)
}
