package store

import (
	"strconv"
	"strings"
)

// MaxReceiptsLimit is the largest ReceiptsQuery.Limit accepted.
const MaxReceiptsLimit = 1000

// ReceiptsQuery asks for one page of a resource's receipts in (fence,
// seq) order: those after (AfterFence, AfterSeq) (zero for the first
// page), at most Limit. The next page starts after the last receipt
// returned; a page shorter than Limit is the last. A page is read in one
// transaction.
type ReceiptsQuery struct {
	Resource   string
	AfterFence uint64
	AfterSeq   uint64
	// Limit bounds the page: 1..MaxReceiptsLimit.
	Limit int
}

// Validate checks a receipts query: a valid resource, Limit in
// 1..MaxReceiptsLimit.
func (q ReceiptsQuery) Validate() error {
	if err := ValidateResource(q.Resource); err != nil {
		return err
	}
	if q.Limit < 1 || q.Limit > MaxReceiptsLimit {
		return invalid("limit", "must be in 1.."+strconv.Itoa(MaxReceiptsLimit))
	}
	return nil
}

// after reports whether k sorts after the query's position.
func (q ReceiptsQuery) after(k ReceiptKey) bool {
	return k.Fence > q.AfterFence || (k.Fence == q.AfterFence && k.Seq > q.AfterSeq)
}

// ReceiptIDLen is the length of a receipt ID: "rcpt-" and 32 hex digits
// (ReceiptID).
const ReceiptIDLen = len("rcpt-") + 32

// ValidateReceiptID checks a receipt ID as ReceiptID writes it (the
// Fence-Receipt header's value): "rcpt-" and 32 lowercase hex digits.
func ValidateReceiptID(id string) error {
	if len(id) != ReceiptIDLen || !strings.HasPrefix(id, "rcpt-") {
		return invalid("receiptId", `want "rcpt-" and 32 lowercase hex digits`)
	}
	for _, c := range []byte(id[len("rcpt-"):]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return invalid("receiptId", `want "rcpt-" and 32 lowercase hex digits`)
		}
	}
	return nil
}
