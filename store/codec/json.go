package codec

import (
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/store"
)

// isJSON reports whether b is a value of the JSON encoding (an object).
func isJSON(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// recordJSON and receiptJSON decode a value of the JSON encoding (apart,
// so that the binary path's value stays off the heap).
func recordJSON(b []byte) (store.Record, error) {
	var r store.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return store.Record{}, fmt.Errorf("store/codec: JSON record: %v: %w", err, store.ErrCorrupt)
	}
	return r, nil
}

func receiptJSON(b []byte) (store.Receipt, error) {
	var r store.Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return store.Receipt{}, fmt.Errorf("store/codec: JSON receipt: %v: %w", err, store.ErrCorrupt)
	}
	return r, nil
}
