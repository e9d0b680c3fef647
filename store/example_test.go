package store_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
)

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// Example is the stale-owner story against the fenced store: worker B's
// fence 8 is accepted, then worker A wakes with fence 7 and is refused.
func Example() {
	ctx := context.Background()
	st := memory.New(memory.Options{})
	defer st.Close()
	now := time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)
	attempt := func(fence uint64, root, owner, payload string) store.BeginInput {
		return store.BeginInput{
			Resource: "invoice-batch/7", Fence: fence, Root: root, Seq: 1,
			PayloadDigest: digest(payload), GrantDigest: digest(root[7:8]), Lease: "lease-" + owner, Owner: owner,
			Now: now, Deadline: now.Add(30 * time.Second),
		}
	}

	b, _ := st.Begin(ctx, attempt(8, digest("b"), "worker-b", "1"))
	fmt.Println("B:", b.Decision)
	rc, _ := st.Commit(ctx, store.CommitInput{OpRef: b.Mutation.Ref(), BackendStatus: 200, Now: now})
	fmt.Println("receipt:", rc.OperationID == digest("b")+"/1")

	a, _ := st.Begin(ctx, attempt(7, digest("a"), "worker-a", "2"))
	fmt.Println("A:", a.Decision, "- highest fence", a.Record.HighestFence)

	// The same segment sent again by B replays its receipt.
	again, _ := st.Begin(ctx, attempt(8, digest("b"), "worker-b", "1"))
	fmt.Println("B again:", again.Decision)
	// Output:
	// B: PROCEED
	// receipt: true
	// A: STALE_OWNER - highest fence 8
	// B again: REPLAY
}

// ExampleDecide: the decision is a pure function over the stored record and
// the receipt of (fence, seq); a backend writes the returned change in the
// same atomic step.
func ExampleDecide() {
	now := time.Date(2026, 7, 19, 12, 0, 0, 0, time.UTC)
	rec := store.Record{Resource: "r", HighestFence: 5, Root: digest("5"), LastSeq: 2}
	in := store.BeginInput{Resource: "r", Fence: 5, Root: digest("5"), Seq: 4, PayloadDigest: digest("d"),
		GrantDigest: digest("e"), Lease: "l", Owner: "w", Now: now, Deadline: now.Add(time.Minute)}
	res, change, _ := store.Decide(rec, nil, in)
	fmt.Println(res.Decision, change.WriteRecord)
	in.Seq = 3
	res, change, _ = store.Decide(rec, nil, in)
	fmt.Println(res.Decision, change.WriteRecord)
	// Output:
	// SEGMENT_GAP false
	// PROCEED true
}
