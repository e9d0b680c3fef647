package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store/anchor"
)

// StoreLoss is a fenced store anchored at the registry (store/anchor),
// which knows when it lost data.
type StoreLoss interface {
	// Lost is non-nil while the store refuses every write for a loss.
	Lost() error
	// CheckLoss is the readiness check (no registry call).
	CheckLoss(ctx context.Context) error
	// Report describes the store's state for operators.
	Report() anchor.LossReport
}

// StoreStatus is the answer of GET /v1/store: the store's name and
// generations, whether it is lost, and while it is, the one command that
// acknowledges the loss at the registry.
type StoreStatus struct {
	anchor.LossReport
	Registry string `json:"registry,omitempty"`
	// Acknowledge is the command an operator runs, after checking the
	// loss, to let writes flow again (fencegate store acknowledge-loss).
	Acknowledge string `json:"acknowledge,omitempty"`
}

// StoreLossAnswer is the body of POST /v1/store/acknowledge-loss when the
// store is not lost (nothing to acknowledge).
type StoreLossAnswer struct {
	// Acknowledged is always "" here: a loss is acknowledged at the
	// registry (see StoreStatus.Acknowledge).
	Acknowledged string `json:"acknowledged"`
	// Generation is the store's generation, the one the registry anchors.
	Generation string `json:"generation"`
}

// status is the store's StoreStatus.
func (s *server) status() StoreStatus {
	r := s.Store.Report()
	st := StoreStatus{LossReport: r, Registry: s.RegistryURL}
	if r.Lost {
		gen := r.Presented
		if gen == "" {
			gen = r.Generation
		}
		reg := s.RegistryURL
		if reg == "" {
			reg = "<registry URL>"
		}
		st.Acknowledge = strings.Join([]string{"fencegate store acknowledge-loss", "--registry", reg,
			"--admin-token-file", "<registry admin token file>", "--store", r.Store, "--generation", gen}, " ")
	}
	return st
}

// storeStatus is GET /v1/store.
func (s *server) storeStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, s.status())
}

// acknowledgeLoss no longer acknowledges on this sidecar: the store's
// generation is anchored at the registry, shared by every sidecar of the
// store, and only an admin there adopts a new one. While the store is lost
// it answers 409 STORE_LOST with the exact command to run; otherwise 200
// with nothing acknowledged.
func (s *server) acknowledgeLoss(w http.ResponseWriter, _ *http.Request) {
	st := s.status()
	if !st.Lost {
		writeJSON(w, 200, StoreLossAnswer{Generation: st.Generation})
		return
	}
	problemExtra(w, 409, fencegate.CodeStoreLost,
		fmt.Sprintf("a store's loss is acknowledged at the registry, for every sidecar of the store at once; check the loss, then run: %s", st.Acknowledge),
		map[string]any{"store": st.Store, "generation": st.Presented, "anchored": st.Generation, "acknowledge": st.Acknowledge})
}
