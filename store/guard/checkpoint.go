package guard

import (
	"encoding/binary"
	"fmt"
)

// Checkpoint is what a sidecar remembered about one resource: the highest
// fence and the last segment it saw the store accept, and the mutation it
// saw declared UNKNOWN and not yet settled, if any.
type Checkpoint struct {
	// Fence is the highest fence seen accepted.
	Fence uint64 `json:"fence"`
	// Seq is the last segment seen committed under Fence (0 if none).
	Seq uint64 `json:"seq"`
	// UnknownFence and UnknownSeq name the mutation seen UNKNOWN and not
	// seen settled; both 0 when none is outstanding.
	UnknownFence uint64 `json:"unknownFence,omitempty"`
	UnknownSeq   uint64 `json:"unknownSeq,omitempty"`
	// SawPause is set once the resource was seen paused.
	SawPause bool `json:"sawPause,omitempty"`
	// Touched ordered checkpoints by last use, for eviction.
	Touched uint64 `json:"touched"`
}

// The stored value of a checkpoint: a format byte, then Fence, Seq,
// UnknownFence, UnknownSeq and Touched as big-endian uint64, then a flags
// byte (bit 0: SawPause). Fixed size, so a torn or foreign value is
// recognised by its length alone.
const (
	cpFormat   = 1
	cpSize     = 1 + 5*8 + 1
	flagPaused = 1
)

// Encode returns the stored value of c (what the guard wrote).
func (c Checkpoint) Encode() []byte {
	b := make([]byte, 0, cpSize)
	b = append(b, cpFormat)
	for _, v := range []uint64{c.Fence, c.Seq, c.UnknownFence, c.UnknownSeq, c.Touched} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	var flags byte
	if c.SawPause {
		flags |= flagPaused
	}
	return append(b, flags)
}

// decodeCheckpoint parses a stored value; anything but exactly the shape
// Encode writes is ErrCorrupt.
func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) != cpSize || b[0] != cpFormat || b[cpSize-1]&^flagPaused != 0 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint value of %d bytes", ErrCorrupt, len(b))
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[1+8*i:]) }
	c := Checkpoint{Fence: u(0), Seq: u(1), UnknownFence: u(2), UnknownSeq: u(3), Touched: u(4)}
	c.SawPause = b[cpSize-1]&flagPaused != 0
	return c, nil
}
