package main

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/atomicfile"
)

// proofFile keeps a fresh status proof of grant run's lease in a file
// for a command whose writes go to proof-mode routes.
type proofFile struct {
	h      *client.Holder
	path   string
	maxAge time.Duration
}

// refresh writes a proof at most half of maxAge old (Holder.StatusProof)
// to the file, atomically (a reader sees the old proof or the new one,
// never a part), with the permissions of a secret (0600).
func (p *proofFile) refresh(ctx context.Context) (string, error) {
	proof, err := p.h.StatusProof(ctx, p.maxAge)
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(p.path, []byte(proof+"\n")); err != nil {
		return "", err
	}
	return proof, nil
}

// period is how often the file is rewritten: a quarter of maxAge, so the
// proof in it is never older than three quarters of maxAge.
func (p *proofFile) period() time.Duration { return max(p.maxAge/4, 10*time.Millisecond) }
