package memory_test

import (
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

func TestConformance(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) registrytest.Opener {
		return registrytest.Opener{
			Open:       func() (registry.Backend, error) { return memory.NewBackend(), nil },
			NotDurable: "the memory backend keeps nothing across a restart",
		}
	})
}
