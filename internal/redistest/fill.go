package redistest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// Filled is a server held out of memory by Fill; Free gives it back.
type Filled struct {
	c         *goredis.Client
	maxmemory string
}

// Fill writes filler keys (prefix "filler:") until the server refuses
// with OOM, with smaller and smaller values, then lowers the server's
// maxmemory to half of the memory it uses: the server is out of memory
// by a wide margin, so that a buffer it frees later (a client's query
// buffer shrunk by its cron) cannot bring it back under the limit
// between two of the test's commands, and every write, and every command
// queued in a MULTI, is refused until Free.
func Fill(t testing.TB, c *goredis.Client) *Filled {
	t.Helper()
	ctx := context.Background()
	cfg, err := c.ConfigGet(ctx, "maxmemory").Result()
	if err != nil {
		t.Fatalf("reading maxmemory: %v", err)
	}
	f := &Filled{c: c, maxmemory: cfg["maxmemory"]}
	n := 0
	for _, size := range []int{32 << 10, 1 << 10, 16} {
		v := strings.Repeat("x", size)
		for {
			n++
			err := c.Set(ctx, "filler:"+strconv.Itoa(n), v, 0).Err()
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
	used, err := usedMemory(ctx, c)
	if err != nil {
		t.Fatalf("reading used_memory: %v", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used/2, 10)).Err(); err != nil {
		t.Fatalf("lowering maxmemory: %v", err)
	}
	return f
}

// Free deletes the filler keys, and only them, and puts back the
// maxmemory the server had before Fill.
func (f *Filled) Free(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if err := f.c.ConfigSet(ctx, "maxmemory", f.maxmemory).Err(); err != nil {
		t.Fatalf("restoring maxmemory: %v", err)
	}
	it := f.c.Scan(ctx, 0, "filler:*", 1000).Iterator()
	for it.Next(ctx) {
		if err := f.c.Del(ctx, it.Val()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
}

// usedMemory is INFO memory's used_memory, in bytes.
func usedMemory(ctx context.Context, c *goredis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errNoUsedMemory
}

var errNoUsedMemory = errors.New("redistest: INFO memory has no used_memory")
