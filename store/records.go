package store

import (
	"strconv"

	"github.com/fencegate/fencegate"
)

// MaxRecordsLimit is the largest RecordsQuery.Limit accepted.
const MaxRecordsLimit = 1000

// RecordsQuery asks for one page of records in resource order (by bytes,
// as Go compares strings): those whose resource sorts after After ("" for
// the first page), at most Limit. The next page starts after the last
// resource returned; a page shorter than Limit is the last. Each record is
// read atomically; a page is not a snapshot of the whole store (a record
// written while paging shows as it was when its page was read).
type RecordsQuery struct {
	// After is the last resource of the previous page ("" for the first).
	After string
	// Limit bounds the page: 1..MaxRecordsLimit.
	Limit int
}

// Validate checks a records query: After "" or a valid resource, Limit in
// 1..MaxRecordsLimit.
func (q RecordsQuery) Validate() error {
	if q.After != "" {
		if err := invalidErr("after", fencegate.ValidateResource(q.After)); err != nil {
			return err
		}
	}
	if q.Limit < 1 || q.Limit > MaxRecordsLimit {
		return invalid("limit", "must be in 1.."+strconv.Itoa(MaxRecordsLimit))
	}
	return nil
}
