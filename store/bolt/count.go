package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/fencegate/fencegate/store"
)

// count reads the number of resource's receipts from the counts bucket.
func (t tx) count(resource string) (int, error) {
	var kb [keyBuf]byte
	v := t.t.Bucket(bucketCounts).Get(append(kb[:0], resource...))
	if v == nil {
		return 0, nil
	}
	n, err := decodeCount(v)
	if err != nil {
		return 0, fmt.Errorf("store: bolt: receipt count of %q %w", resource, err)
	}
	return n, nil
}

// decodeCount reads a stored count: 8 bytes big-endian, never zero. Its
// error reads after the resource's name.
func decodeCount(v []byte) (int, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("is %d bytes: %w", len(v), store.ErrCorrupt)
	}
	n := binary.BigEndian.Uint64(v)
	if n == 0 || n > uint64(maxInt) {
		return 0, fmt.Errorf("is %d: %w", n, store.ErrCorrupt)
	}
	return int(n), nil
}

const maxInt = int(^uint(0) >> 1)

// addCount adds d (+1 or -1) to resource's receipt count, in the write
// transaction that stores or deletes one of its receipts; a count that
// would go below zero is ErrCorrupt (the counts and the receipts are one
// snapshot). A count of zero is no key.
func (t tx) addCount(resource string, d int) error {
	n, err := t.count(resource)
	if err != nil {
		return err
	}
	if n+d < 0 {
		return fmt.Errorf("store: bolt: receipt count of %q below zero: %w", resource, store.ErrCorrupt)
	}
	b := t.t.Bucket(bucketCounts)
	if n+d == 0 {
		return b.Delete([]byte(resource))
	}
	return b.Put([]byte(resource), binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n+d)))
}
