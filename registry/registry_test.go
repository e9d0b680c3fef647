package registry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

func TestNewRejectsBadOptions(t *testing.T) {
	k := registrytest.NewKeys(t)
	be := memory.NewBackend()
	defer be.Close()
	for name, o := range map[string]registry.Options{
		"no backend":       {Signer: k.Signer},
		"no signer":        {Backend: be},
		"min above max":    {Backend: be, Signer: k.Signer, MinTTL: time.Minute, MaxTTL: time.Second, DefaultTTL: time.Second},
		"default too low":  {Backend: be, Signer: k.Signer, MinTTL: time.Second, DefaultTTL: time.Millisecond},
		"default too high": {Backend: be, Signer: k.Signer, MaxTTL: time.Second, DefaultTTL: time.Minute},
	} {
		if _, err := registry.New(o); !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("%s: New error %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := registry.New(registry.Options{Backend: be, Signer: k.Signer}); err != nil {
		t.Errorf("New with defaults: %v", err)
	}
}

func TestLeaseState(t *testing.T) {
	now := clocktest.Start
	held := registry.LeaseRecord{State: fencegate.StateHeld, IssuerEpoch: 2, PolicyGeneration: 5, ExpiresAt: now.UnixMilli() + 1}
	m := registry.Meta{IssuerEpoch: 2}
	cases := []struct {
		name string
		l    registry.LeaseRecord
		m    registry.Meta
		gen  uint64
		now  time.Time
		want string
	}{
		{"held", held, m, 5, now, fencegate.StateHeld},
		{"at expiry", held, m, 5, now.Add(time.Millisecond), fencegate.StateExpired},
		{"older epoch", held, registry.Meta{IssuerEpoch: 3}, 5, now, fencegate.StateRevoked},
		{"newer policy", held, m, 6, now, fencegate.StateRevoked},
		{"policy deleted to generation 0", held, m, 0, now, fencegate.StateRevoked},
		{"revoked wins over expired", held, registry.Meta{IssuerEpoch: 3}, 5, now.Add(time.Hour), fencegate.StateRevoked},
		{"stored released", func() registry.LeaseRecord { l := held; l.State = fencegate.StateReleased; return l }(), registry.Meta{IssuerEpoch: 9}, 5, now, fencegate.StateReleased},
	}
	for _, c := range cases {
		if got := registry.LeaseState(c.l, c.m, c.gen, c.now); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestMatchPolicy(t *testing.T) {
	ps := []fencegate.Policy{
		{Pattern: "*", Generation: 1},
		{Pattern: "a/*", Generation: 2},
		{Pattern: "a/b/*", Generation: 3},
		{Pattern: "a/b/c", Generation: 4},
		{Pattern: "x/*", Generation: 5, Deleted: true},
	}
	for res, want := range map[string]uint64{
		"z":       1,
		"a/z":     2,
		"a/b/z":   3,
		"a/b/c":   4,
		"a/b/c/d": 3,
		"a":       1,
		"x/y":     5,
	} {
		if got := registry.MatchPolicy(ps, res).Generation; got != want {
			t.Errorf("%s: generation %d, want %d", res, got, want)
		}
	}
	if got := registry.MatchPolicy(nil, "a"); got.Generation != 0 || got.Pattern != "" {
		t.Errorf("no policies: %+v", got)
	}
	if err := registry.CheckPolicy(registry.MatchPolicy(ps, "x/y"), "anyone", "any", time.Hour); err != nil {
		t.Errorf("a tombstone refused: %v", err)
	}
}

func TestOperationRoot(t *testing.T) {
	a := registry.OperationRoot("r", 7, "g-1")
	if a != registry.OperationRoot("r", 7, "g-1") {
		t.Fatal("not deterministic")
	}
	for _, b := range []string{registry.OperationRoot("r", 8, "g-1"), registry.OperationRoot("r", 7, "g-2"), registry.OperationRoot("r2", 7, "g-1")} {
		if a == b {
			t.Errorf("operation roots collide: %s", a)
		}
	}
}
