package adminapi

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
)

// StoreLoss is a shared store that detects a loss of its data (store/redis:
// its generation marker) and lets an operator acknowledge it.
type StoreLoss interface {
	// GenerationLoss is non-nil while the store refuses every call
	// because its data set is not the one this sidecar wrote to.
	GenerationLoss() error
	// CheckGeneration looks at the store now (readiness), returning the
	// loss or the store's own error.
	CheckGeneration(ctx context.Context) error
	// AcknowledgeGeneration adopts the data set the store has now.
	AcknowledgeGeneration(ctx context.Context) error
	// ExpectedGeneration is the marker of the data set the store expects.
	ExpectedGeneration() string
}

// StoreLossAnswer is the body of POST /v1/store/acknowledge-loss.
type StoreLossAnswer struct {
	// Acknowledged is the loss the call acknowledged ("" when there was
	// none: nothing changed).
	Acknowledged string `json:"acknowledged"`
	// Generation is the store's generation marker from now on.
	Generation string `json:"generation"`
}

// acknowledgeLoss adopts the shared store's current data set after a loss:
// writes flow again, while the per-resource checkpoints keep refusing any
// fence below what this sidecar saw accepted (FENCE_REGRESSION). Without a
// loss it changes nothing.
func (s *server) acknowledgeLoss(w http.ResponseWriter, req *http.Request) {
	loss := s.Store.GenerationLoss()
	if loss == nil {
		writeJSON(w, 200, StoreLossAnswer{Generation: s.Store.ExpectedGeneration()})
		return
	}
	if err := s.Store.AcknowledgeGeneration(req.Context()); err != nil {
		s.Logger.Error("acknowledging the store's data loss failed", zap.Error(err))
		problem(w, 503, fencegate.CodeStoreUnavailable, "acknowledge: "+err.Error())
		return
	}
	s.Logger.Warn("operator acknowledged the store's data loss: writes flow again; per-resource checkpoints still refuse fences below what this sidecar saw",
		zap.String("loss", loss.Error()), zap.String("generation", s.Store.ExpectedGeneration()))
	writeJSON(w, 200, StoreLossAnswer{Acknowledged: loss.Error(), Generation: s.Store.ExpectedGeneration()})
}
