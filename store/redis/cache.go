package redis

import "sync"

// The cache's bounds: at most cacheEntries keys and cacheBytes bytes of
// keys and values (a value longer than cacheMaxValue is not kept: its key
// is read from the server, or presumed absent and corrected by the step
// script, at one more round trip). A record is some 270 bytes of JSON and
// a receipt with a small response some 560, so the byte bound is the one
// that binds: a full cache holds some 18,000 entries (9,000 resources'
// record and last receipt) in 9.7 MiB of heap (BenchmarkCacheMemory).
const (
	cacheEntries  = 1 << 16
	cacheBytes    = 8 << 20
	cacheMaxValue = 16 << 10
)

// cache holds, per Store, the values this process last read or wrote for
// the keys a transition reads: records (or their absence) and receipts.
// It is only a guess: every decision made on it is checked by the step
// script against the server's values before anything is written, so a
// stale entry costs one more run, never a wrong decision. A receipt key
// without an entry is presumed absent (a segment's receipt is normally
// read before it exists); a record key without one is read from the
// server.
//
// Two generations bound it: entries go to cur; when cur holds half the
// bounds it becomes old (the previous old is dropped) and a fresh cur
// starts; a hit in old moves to cur. So it holds at most cacheEntries
// entries and cacheBytes bytes, and keeps what is used.
type cache struct {
	mu       sync.Mutex
	cur, old map[string]entry
	curBytes int
}

// entry is a cached value; nil val with present false: known absent.
type entry struct {
	val     []byte
	present bool
}

func newCache() *cache {
	return &cache{cur: map[string]entry{}, old: map[string]entry{}}
}

// get returns the entry of key and whether there is one.
func (c *cache) get(key string) (entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cur[key]; ok {
		return e, true
	}
	e, ok := c.old[key]
	if ok {
		delete(c.old, key)
		c.insert(key, e)
	}
	return e, ok
}

// put records val (nil: absent) as key's value. A value too long to keep
// drops the key instead.
func (c *cache) put(key string, val []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if len(val) > cacheMaxValue {
		return
	}
	c.insert(key, entry{val: val, present: val != nil})
}

// drop forgets keys.
func (c *cache) drop(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.remove(k)
	}
}

// size is the number of entries and their bytes (tests, benchmarks).
func (c *cache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.curBytes
	for k, e := range c.old {
		n += len(k) + len(e.val)
	}
	return len(c.cur) + len(c.old), n
}

func (c *cache) insert(key string, e entry) {
	if len(c.cur) >= cacheEntries/2 || c.curBytes >= cacheBytes/2 {
		c.old, c.cur, c.curBytes = c.cur, make(map[string]entry, len(c.cur)), 0
	}
	c.cur[key] = e
	c.curBytes += len(key) + len(e.val)
}

func (c *cache) remove(key string) {
	if e, ok := c.cur[key]; ok {
		delete(c.cur, key)
		c.curBytes -= len(key) + len(e.val)
	}
	delete(c.old, key)
}
