package sim

import (
	"context"
	"testing"
)

func TestTmpProf(t *testing.T) {
	_, err := Run(context.Background(), Options{Rounds: 4000, Seed: 20261130, Faults: AllFaults(), Replicas: 3, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
}
