package storetest

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/store"
)

// BeginCommitLoop performs n accepted mutations (Begin → PROCEED, then
// Commit) spread over `resources` goroutines, each working on its own
// resource (prefix + index) as one owner committing segments 1, 2, 3, ...
// It fails tb on any other outcome. Benchmarks of every backend use it.
func BeginCommitLoop(tb testing.TB, s store.Store, prefix string, resources, n int) {
	if resources < 1 {
		resources = 1
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan string, resources)
	for i := range resources {
		count := n / resources
		if i < n%resources {
			count++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resource := prefix + strconv.Itoa(i)
			start := uint64(1)
			if rec, err := s.Record(ctx, resource); err == nil {
				start = rec.LastSeq + 1
			}
			in := Attempt(resource, 1, start, "payload")
			ans := Answer(in.Ref())
			for k := range count {
				in.Seq = start + uint64(k)
				res, err := s.Begin(ctx, in)
				if err != nil || res.Decision != store.DecisionProceed {
					errs <- "Begin: " + string(res.Decision) + " " + res.Detail + errString(err)
					return
				}
				ans.Seq = in.Seq
				if _, err := s.Commit(ctx, ans); err != nil {
					errs <- "Commit: " + err.Error()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		tb.Fatal(e)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
