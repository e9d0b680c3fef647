package codec

import (
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/store"
)

// isJSON reports whether b is a value of the JSON encoding (an object).
func isJSON(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// decodeJSON decodes a value of the JSON encoding into v.
func decodeJSON(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store/codec: JSON %s: %v: %w", what, err, store.ErrCorrupt)
	}
	return nil
}
