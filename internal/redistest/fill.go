package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// Fill writes filler keys (prefix "filler:") until the server refuses
// with OOM, with smaller and smaller values, so that it refuses even a
// small write: the memory in use stays above maxmemory.
func Fill(t testing.TB, c *goredis.Client) {
	t.Helper()
	n := 0
	for _, size := range []int{32 << 10, 1 << 10, 16} {
		v := strings.Repeat("x", size)
		for {
			n++
			err := c.Set(context.Background(), "filler:"+strconv.Itoa(n), v, 0).Err()
			if err != nil {
				if !strings.Contains(err.Error(), "OOM") {
					t.Fatalf("filling: %v, want OOM", err)
				}
				break
			}
			if n > 100000 {
				t.Fatal("the server never ran out of memory")
			}
		}
	}
}

// Free deletes the filler keys, and only them.
func Free(t testing.TB, c *goredis.Client) {
	t.Helper()
	ctx := context.Background()
	it := c.Scan(ctx, 0, "filler:*", 1000).Iterator()
	for it.Next(ctx) {
		if err := c.Del(ctx, it.Val()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
}
