package campaign

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencegate/fencegate"
)

// Result is what a campaign found. Everything but Elapsed depends only on
// the seed, N and the kinds.
type Result struct {
	N    int
	Seed uint64
	// Kinds holds one row per kind run, in table order.
	Kinds []KindResult
	// Examples are accepted or panicking mutations, lowest index first, at
	// most MaxExamples per kind: what to reproduce a failure from.
	Examples []Example
	// Elapsed is the wall time of the run (not compared by Equal).
	Elapsed time.Duration
}

// KindResult counts the mutations of one kind. Generated is the sum of
// Equivalent, Accepted, Panicked and the Rejected counts.
type KindResult struct {
	Name       string
	Generated  int
	Equivalent int
	Accepted   int
	Panicked   int
	// Rejected counts rejections by code (GRANT_INVALID, EPOCH_REVOKED, ...).
	Rejected map[fencegate.Code]int
	// Reasons counts rejections by the verify reason sentinel's text
	// ("bad signature", ...), "" for a rejection without a finer reason.
	Reasons map[string]int
}

// RejectedTotal is the number of rejected mutations of the kind.
func (k KindResult) RejectedTotal() int {
	n := 0
	for _, c := range k.Rejected {
		n += c
	}
	return n
}

// Example is one mutation worth reproducing.
type Example struct {
	Index   int
	Kind    string
	Variant string
	Tuple   Tuple
	// Verdict is "accepted" or "panic: ..." .
	Verdict string
}

// MaxExamples is how many examples per kind a Result keeps.
const MaxExamples = 3

// Accepted is the number of accepted mutations over all kinds.
func (r Result) Accepted() int { return r.sum(func(k KindResult) int { return k.Accepted }) }

// Panicked is the number of mutations whose generation or check panicked.
func (r Result) Panicked() int { return r.sum(func(k KindResult) int { return k.Panicked }) }

// Generated is the number of mutations generated over all kinds.
func (r Result) Generated() int { return r.sum(func(k KindResult) int { return k.Generated }) }

func (r Result) sum(f func(KindResult) int) int {
	n := 0
	for _, k := range r.Kinds {
		n += f(k)
	}
	return n
}

// Passed reports whether all N mutations were run and none was accepted
// and none panicked.
func (r Result) Passed() bool {
	return r.Generated() == r.N && r.Accepted() == 0 && r.Panicked() == 0
}

// Kind returns the row of a kind (the zero row when it was not run).
func (r Result) Kind(name string) KindResult {
	for _, k := range r.Kinds {
		if k.Name == name {
			return k
		}
	}
	return KindResult{Name: name}
}

// Verdict is the final line: "campaign: PASS (0 of N accepted)" or
// "campaign: FAIL (...)".
func (r Result) Verdict() string {
	if r.Passed() {
		return fmt.Sprintf("campaign: PASS (0 of %d accepted)", r.N)
	}
	return fmt.Sprintf("campaign: FAIL (%d of %d accepted, %d panicked, %d of %d run)",
		r.Accepted(), r.N, r.Panicked(), r.Generated(), r.N)
}

// WriteTable writes the per-kind table, the examples of a failure and the
// verdict line.
func (r Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "kind\tgenerated\trejected\tequivalent\taccepted\tpanicked\t\trejected by code\n")
	total := KindResult{Name: "total", Rejected: map[fencegate.Code]int{}}
	for _, k := range r.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\t%s\n", k.Name, k.Generated, k.RejectedTotal(), k.Equivalent, k.Accepted, k.Panicked, codes(k.Rejected))
		total.Generated += k.Generated
		total.Equivalent += k.Equivalent
		total.Accepted += k.Accepted
		total.Panicked += k.Panicked
		for c, n := range k.Rejected {
			total.Rejected[c] += n
		}
	}
	k := total
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\t%s\n", k.Name, k.Generated, k.RejectedTotal(), k.Equivalent, k.Accepted, k.Panicked, codes(k.Rejected))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("campaign: table: %w", err)
	}
	for _, e := range r.Examples {
		fmt.Fprintf(w, "\n%s #%d (%s): %s\n  resource: %q\n  owner:    %q\n  grant:    %s\n  proof:    %s\n",
			e.Kind, e.Index, e.Variant, e.Verdict, e.Tuple.Resource, e.Tuple.Owner, e.Tuple.Grant, e.Tuple.Proof)
	}
	_, err := fmt.Fprintf(w, "\nelapsed %s\n%s\n", r.Elapsed.Round(time.Millisecond), r.Verdict())
	return err
}

// codes renders counts by code, largest first.
func codes(m map[fencegate.Code]int) string {
	cs := slices.Collect(maps.Keys(m))
	slices.SortFunc(cs, func(a, b fencegate.Code) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s=%d", c, m[c])
	}
	return strings.Join(parts, " ")
}
