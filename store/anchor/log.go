package anchor

import (
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
)

func zapResource(r string) zap.Field { return zap.String("resource", r) }
func zapErr(err error) zap.Field     { return zap.Error(err) }

// zapProgress logs a Progress compactly.
func zapProgress(key string, p fencegate.Progress) zap.Field {
	f := []zap.Field{zap.Uint64("fence", p.Fence), zap.String("root", p.Root), zap.Uint64("lastSeq", p.LastSeq)}
	if p.Pending != nil {
		f = append(f, zap.Uint64("pendingSeq", p.Pending.Seq), zap.String("pendingPayload", p.Pending.PayloadDigest))
	}
	if p.Paused != "" {
		f = append(f, zap.String("paused", p.Paused))
	}
	return zap.Dict(key, f...)
}
