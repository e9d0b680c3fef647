package redis

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// The stored values are the JSON encodings of the store types, the same
// shapes store/bolt writes (pinned by its golden test).

func encode(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store/redis: encode: %w", err)
	}
	return raw, nil
}

// raw returns the value of a GET or HGET: nil when absent, an error for a
// Redis failure.
func raw(cmd *goredis.StringCmd, op string) ([]byte, error) {
	b, err := cmd.Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	return b, nil
}

func decode(b []byte, what string, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store/redis: decode %s: %v: %w", what, err, store.ErrCorrupt)
	}
	return nil
}

// decodeRecord decodes the record stored for resource; the zero Record if b
// is nil.
func decodeRecord(b []byte, resource string) (store.Record, error) {
	if b == nil {
		return store.Record{}, nil
	}
	var r store.Record
	if err := decode(b, "record of "+strconv.Quote(resource), &r); err != nil {
		return store.Record{}, err
	}
	if r.Resource != resource {
		return store.Record{}, fmt.Errorf("store/redis: record under %q names %q: %w", resource, r.Resource, store.ErrCorrupt)
	}
	return r, nil
}

// decodeReceipt decodes the receipt stored for k; nil if b is nil.
func decodeReceipt(b []byte, k store.ReceiptKey) (*store.Receipt, error) {
	if b == nil {
		return nil, nil
	}
	var r store.Receipt
	if err := decode(b, fmt.Sprintf("receipt %v", k), &r); err != nil {
		return nil, err
	}
	if r.Key() != k {
		return nil, fmt.Errorf("store/redis: receipt under %v names %v: %w", k, r.Key(), store.ErrCorrupt)
	}
	return &r, nil
}

func decodeQuarantine(b []byte, resource, id string) (store.Quarantine, error) {
	var q store.Quarantine
	if err := decode(b, "quarantine "+id, &q); err != nil {
		return store.Quarantine{}, err
	}
	if q.Resource != resource || q.ID != id {
		return store.Quarantine{}, fmt.Errorf("store/redis: quarantine under %q/%s names %q/%s: %w", resource, id, q.Resource, q.ID, store.ErrCorrupt)
	}
	return q, nil
}

// decodeMismatch is the error of a value stored under one key naming
// another.
func decodeMismatch(what, under, names string) error {
	return fmt.Errorf("store/redis: %s under %q names %q: %w", what, under, names, store.ErrCorrupt)
}

// decodeTrust decodes the trust pins hash (kid → JSON store.TrustedKey),
// by kid, and the total length of its values.
func decodeTrust(m map[string]string) ([]store.TrustedKey, int, error) {
	out := make([]store.TrustedKey, 0, len(m))
	n := 0
	for kid, v := range m {
		var p store.TrustedKey
		if err := decode([]byte(v), "trust pin "+kid, &p); err != nil {
			return nil, 0, err
		}
		if p.Kid != kid {
			return nil, 0, decodeMismatch("trust pin", kid, p.Kid)
		}
		out = append(out, p)
		n += len(v)
	}
	slices.SortFunc(out, func(a, b store.TrustedKey) int { return strings.Compare(a.Kid, b.Kid) })
	return out, n, nil
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
