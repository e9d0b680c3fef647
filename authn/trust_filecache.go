package authn

import (
	"crypto/sha256"
	"sync"
)

// maxParsedBundles bounds the parsed bundle files kept: a file rewritten
// more often than this with ever new contents is parsed at each read, as
// without the cache.
const maxParsedBundles = 16

// parsedBundles are the trust bundle files this process parsed, by their
// bytes: every poll tick reads the file again, and every sidecar started
// in the process (a restart, the simulation's rounds) reads it at its
// start; a file with the same bytes is not parsed again. A parse depends
// on nothing but the bytes and allowHS, and a parsed bundleFile is never
// changed after parseBundleFile, so it is shared as it is. A refused file
// is not kept: it is parsed again, and refused again, at each read.
var parsedBundles = &bundleCache{files: map[bundleCacheKey]*bundleFile{}}

type bundleCacheKey struct {
	sum     [32]byte
	allowHS bool
}

type bundleCache struct {
	mu    sync.Mutex
	files map[bundleCacheKey]*bundleFile
}

// parse is parseBundleFile(raw, allowHS), the same file for the same bytes.
func (c *bundleCache) parse(raw []byte, allowHS bool) (*bundleFile, error) {
	if len(raw) > MaxTrustBundleBytes {
		return parseBundleFile(raw, allowHS) // its refusal, before any hash
	}
	k := bundleCacheKey{sum: sha256.Sum256(raw), allowHS: allowHS}
	c.mu.Lock()
	f := c.files[k]
	c.mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := parseBundleFile(raw, allowHS)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.files) >= maxParsedBundles {
		clear(c.files)
	}
	c.files[k] = f
	c.mu.Unlock()
	return f, nil
}
