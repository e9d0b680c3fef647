package store

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fencegate/fencegate"
)

// ValidateResource checks a canonical resource ID by the contract's one
// rule (fencegate.ValidateResource), as an *InputError.
func ValidateResource(resource string) error {
	return invalidErr("resource", fencegate.ValidateResource(resource))
}

// ValidateDigest checks a digest by the contract's rule
// (fencegate.ValidateDigest), as an *InputError of field.
func ValidateDigest(field, d string) error {
	return invalidErr(field, fencegate.ValidateDigest(d))
}

// ValidateOperationID checks an operation ID by the contract's rule
// (fencegate.ParseOperationID: a valid root, "/", and a canonical decimal
// seq in 1..fencegate.MaxSeq), as an *InputError.
func ValidateOperationID(id string) error {
	_, _, err := fencegate.ParseOperationID(id)
	return invalidErr("operationId", err)
}

// Validate checks the reference: a valid resource and root, fence >= 1 and
// seq in 1..fencegate.MaxSeq.
func (r OpRef) Validate() error {
	if err := ValidateResource(r.Resource); err != nil {
		return err
	}
	if r.Fence == 0 {
		return invalid("fence", "must be >= 1")
	}
	if err := invalidErr("root", fencegate.ValidateOperationRoot(r.Root)); err != nil {
		return err
	}
	if r.Seq == 0 || r.Seq > fencegate.MaxSeq {
		return invalid("seq", "must be in 1.."+strconv.Itoa(fencegate.MaxSeq))
	}
	return nil
}

// Validate checks every field of a Begin input.
func (in BeginInput) Validate() error {
	if err := in.Ref().Validate(); err != nil {
		return err
	}
	if err := ValidateDigest("payloadDigest", in.PayloadDigest); err != nil {
		return err
	}
	if err := ValidateDigest("grantDigest", in.GrantDigest); err != nil {
		return err
	}
	if err := checkText("lease", in.Lease, MaxLeaseLen, true); err != nil {
		return err
	}
	if err := checkText("owner", in.Owner, MaxOwnerLen, true); err != nil {
		return err
	}
	if err := ValidateLineage("evidence.lineage", in.Evidence.Lineage); err != nil {
		return err
	}
	if in.Now.IsZero() {
		return invalid("now", "required")
	}
	if !in.Deadline.After(in.Now) {
		return invalid("deadline", "must be after now")
	}
	if in.Deadline.Sub(in.Now) > MaxInFlightWindow {
		return invalid("deadline", "further than "+MaxInFlightWindow.String()+" after now")
	}
	if !in.QuietAt.IsZero() {
		if !in.QuietAt.After(in.Now) {
			return invalid("quietAt", "must be after now")
		}
		if in.QuietAt.Sub(in.Now) > MaxInFlightWindow {
			return invalid("quietAt", "further than "+MaxInFlightWindow.String()+" after now")
		}
	}
	return nil
}

// ValidateLineage checks an issuer lineage as an *InputError of field: ""
// (unknown: a grant of a registry before lineages), or 1 to
// fencegate.MaxLineageLen bytes of [0-9a-z], the rule of the grant's
// "lineage" claim.
func ValidateLineage(field, l string) error {
	if len(l) > fencegate.MaxLineageLen {
		return invalid(field, "longer than "+strconv.Itoa(fencegate.MaxLineageLen)+" bytes")
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return invalid(field, "want [0-9a-z]")
		}
	}
	return nil
}

// Validate checks every field of a Commit input.
func (in CommitInput) Validate() error {
	if err := in.OpRef.Validate(); err != nil {
		return err
	}
	if err := checkStatus("backendStatus", in.BackendStatus); err != nil {
		return err
	}
	if err := in.Response.validate(in.BackendStatus); err != nil {
		return err
	}
	if in.KeepReceipts < 0 {
		return invalid("keepReceipts", "must be >= 0")
	}
	return checkNow(in.Now)
}

// Validate checks a MarkUnknown input.
func (in MarkUnknownInput) Validate() error {
	if err := in.OpRef.Validate(); err != nil {
		return err
	}
	return checkNow(in.Now)
}

// Validate checks an Abort input.
func (in AbortInput) Validate() error {
	if err := in.OpRef.Validate(); err != nil {
		return err
	}
	return checkNow(in.Now)
}

// Validate checks a Resolve input. Applied requires a Response (its status
// is what replays return; BackendStatus may be 0 when no backend answer was
// observed); not applied forbids both. Closed is only for not applied;
// EvidenceAge is in 0..MaxInFlightWindow.
func (in ResolveInput) Validate() error {
	if err := in.OpRef.Validate(); err != nil {
		return err
	}
	if in.EvidenceAge < 0 || in.EvidenceAge > MaxInFlightWindow {
		return invalid("evidenceAge", "must be in 0.."+MaxInFlightWindow.String())
	}
	if in.Applied && in.Closed {
		return invalid("closed", "only for not applied")
	}
	if in.Applied {
		if in.BackendStatus != 0 {
			if err := checkStatus("backendStatus", in.BackendStatus); err != nil {
				return err
			}
		}
		if err := in.Response.validate(in.BackendStatus); err != nil {
			return err
		}
	} else if in.BackendStatus != 0 || in.Response.Status != 0 || len(in.Response.Header) != 0 || len(in.Response.Body) != 0 {
		return invalid("response", "must be empty when not applied")
	}
	return checkNow(in.Now)
}

// Validate checks a Pause input.
func (in PauseInput) Validate() error {
	if err := ValidateResource(in.Resource); err != nil {
		return err
	}
	if in.Reason != PauseFenceRegression && in.Reason != PauseOperator {
		return invalid("reason", "want FENCE_REGRESSION or OPERATOR")
	}
	if err := checkText("detail", in.Detail, MaxDetailLen, false); err != nil {
		return err
	}
	return checkNow(in.Now)
}

// validate checks a response to be stored; a zero Status takes fallback.
func (r StoredResponse) validate(fallback int) error {
	status := r.Status
	if status == 0 {
		status = fallback
	}
	if err := checkStatus("response.status", status); err != nil {
		return err
	}
	n := 0
	for name, values := range r.Header {
		if err := checkText("response.header", name, MaxHeaderNameLen, true); err != nil {
			return err
		}
		for _, v := range values {
			if err := checkText("response.header", v, MaxHeaderValueLen, false); err != nil {
				return err
			}
		}
		n += len(values)
	}
	if n > MaxResponseHeaders {
		return invalid("response.header", "more than "+strconv.Itoa(MaxResponseHeaders)+" values")
	}
	return nil
}

func checkStatus(field string, s int) error {
	if s < 100 || s > 599 {
		return invalid(field, "want an HTTP status in 100..599")
	}
	return nil
}

func checkNow(now time.Time) error {
	if now.IsZero() {
		return invalid("now", "required")
	}
	return nil
}

// checkText accepts valid UTF-8 without control characters (C0, DEL), at
// most max bytes, non-empty when required. Excluding NUL keeps composite
// backend keys unambiguous.
func checkText(field, s string, max int, required bool) error {
	if s == "" {
		if required {
			return invalid(field, "required")
		}
		return nil
	}
	if len(s) > max {
		return invalid(field, "longer than "+strconv.Itoa(max)+" bytes")
	}
	if !utf8.ValidString(s) {
		return invalid(field, "not valid UTF-8")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return invalid(field, "contains a control character")
		}
	}
	return nil
}

// Validate checks a receipt key: a valid resource, fence >= 1 and seq in
// 1..fencegate.MaxSeq.
func (k ReceiptKey) Validate() error {
	return OpRef{Resource: k.Resource, Fence: k.Fence, Root: "-", Seq: k.Seq}.Validate()
}
