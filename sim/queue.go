package sim

import (
	"container/heap"
	"time"
)

// item is a scheduled step of a round: at a virtual time, with a seeded
// tie-break among steps due at the same time, and the order of scheduling
// as the last resort (so the order is total and the same on every run).
type item struct {
	at  time.Duration
	tie uint64
	seq uint64
	// what labels the step where it is scheduled (read in a debugger).
	what string
	fn   func()
	// bg: background work (a loop's pass, the operator's look), which does
	// not keep the round going by itself.
	bg bool
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.seq < b.seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}

func (q *queue) push(it *item) { heap.Push(q, it) }
func (q *queue) pop() *item    { return heap.Pop(q).(*item) }
