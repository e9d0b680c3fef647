package adminapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// DefaultFencesLimit is the page size of GET /v1/fences without limit=;
// store.MaxRecordsLimit is the largest accepted.
const DefaultFencesLimit = 100

// FencesPage is the answer of GET /v1/fences?after=&limit=: one page of the
// highest fences the sidecar's store accepted, in resource order (by
// bytes). `fencegate fences collect` reads every page of every sidecar to
// find the fence floor a new registry starts from.
type FencesPage struct {
	// Fences are the page's records, one per resource.
	Fences []FenceEntry `json:"fences"`
	// Next is the after= of the next page; "" when this page is the last
	// (it held fewer than limit records). A page of exactly limit records
	// names its last resource, and the next page may be empty.
	Next string `json:"next,omitempty"`
	// MaxFence is the highest fence of this page (0 when it is empty); the
	// store's highest is the largest over every page.
	MaxFence uint64 `json:"maxFence"`
	// MinIssuerEpoch is the lowest issuer epoch of a grant the sidecar
	// accepts now (trust.minIssuerEpoch, or the highest epoch a verified
	// proof carried since it started): a replacing registry's grants must
	// carry at least this epoch, or they are EPOCH_REVOKED.
	MinIssuerEpoch uint64 `json:"minIssuerEpoch"`
}

// FenceEntry is one resource's highest fence.
type FenceEntry struct {
	Resource string `json:"resource"`
	// HighestFence is the highest fence the store accepted for the
	// resource (0 for a record that holds only a pause).
	HighestFence uint64 `json:"highestFence"`
	// Lineage is the issuer lineage of HighestFence's grant ("" for a
	// registry before lineages); PriorLineages are those it superseded.
	Lineage string `json:"lineage,omitempty"`
	// PriorLineages are the lineages it superseded, each with the highest
	// fence the store accepted under it.
	PriorLineages []store.PriorLineage `json:"priorLineages,omitempty"`
	// IssuerEpoch is HighestFence's grant's issuer epoch.
	IssuerEpoch uint64 `json:"issuerEpoch"`
	// LastSeq is the last committed segment under HighestFence.
	LastSeq uint64 `json:"lastSeq"`
	// Paused is the pause reason (FENCE_REGRESSION, OPERATOR, STORE_LOSS),
	// "" when the resource is not paused.
	Paused store.PauseReason `json:"paused,omitempty"`
	// Unknown: a mutation of the resource has an unknown outcome.
	Unknown bool `json:"unknown,omitempty"`
}

// fences answers GET /v1/fences?after=R&limit=N. Both parameters are
// optional and may appear once each (after= empty is the first page); any
// other parameter, a malformed query, an after= that is not a resource ID or a limit that is not a
// decimal in 1..store.MaxRecordsLimit is a 400 INVALID_REQUEST.
func (s *server) fences(w http.ResponseWriter, req *http.Request) {
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		problem(w, 400, fencegate.CodeInvalidRequest, "malformed query: "+err.Error())
		return
	}
	for k, vs := range q {
		if (k != "after" && k != "limit") || len(vs) != 1 {
			problem(w, 400, fencegate.CodeInvalidRequest, "query parameters: after and limit, each at most once")
			return
		}
	}
	rq := store.RecordsQuery{After: q.Get("after"), Limit: DefaultFencesLimit}
	if v, set := q["limit"]; set {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > store.MaxRecordsLimit || strconv.Itoa(n) != v[0] {
			problem(w, 400, fencegate.CodeInvalidRequest, "limit must be a decimal from 1 to "+strconv.Itoa(store.MaxRecordsLimit))
			return
		}
		rq.Limit = n
	}
	if rq.After != "" {
		if err := fencegate.ValidateResource(rq.After); err != nil {
			problem(w, 400, fencegate.CodeInvalidRequest, "after must be a resource ID: "+err.Error())
			return
		}
	}
	recs, err := s.Proxy.Records(req.Context(), rq)
	if err != nil {
		storeProblem(w, err)
		return
	}
	page := FencesPage{Fences: make([]FenceEntry, 0, len(recs)), MinIssuerEpoch: s.Proxy.MinIssuerEpoch()}
	for _, r := range recs {
		e := FenceEntry{
			Resource: r.Resource, HighestFence: r.HighestFence, Lineage: r.Evidence.Lineage, PriorLineages: r.PriorLineages,
			IssuerEpoch: r.Evidence.IssuerEpoch, LastSeq: r.LastSeq, Unknown: r.Unknown(),
		}
		if r.Pause != nil {
			e.Paused = r.Pause.Reason
		}
		page.Fences = append(page.Fences, e)
		page.MaxFence = max(page.MaxFence, r.HighestFence)
	}
	if len(recs) == rq.Limit {
		page.Next = recs[len(recs)-1].Resource
	}
	writeJSON(w, 200, page)
}
