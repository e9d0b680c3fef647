package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestGrantRenewKeepsTheLeaseTTL: "grant renew" without --ttl extends the
// lease by its own TTL (here 2m, far above the registry's 10s default),
// never shortening it; --ttl still sets the TTL of that renewal.
func TestGrantRenewKeepsTheLeaseTTL(t *testing.T) {
	reg := startRegistry(t, "")
	cli := func(args ...string) cliLease {
		t.Helper()
		r := run(t, append(append([]string{"grant"}, args...), "--registry", reg.url, "--owner", "worker-a", "-o", "json")...)
		if r.code != 0 {
			t.Fatalf("grant %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		var l cliLease
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatalf("grant %v: %v\n%s", args, err, r.stdout)
		}
		return l
	}
	a := cli("acquire", "--resource", "renew/1", "--ttl", "2m")
	if a.TTLMs != 120000 {
		t.Fatalf("acquired ttlMs %d", a.TTLMs)
	}
	for _, step := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 2 * time.Minute},
		{[]string{"--ttl", "30s"}, 30 * time.Second},
		{nil, 2 * time.Minute},
	} {
		l := cli(append([]string{"renew", "--lease", a.Lease}, step.args...)...)
		// The status proof is signed at the renewal: expiresAt - iat is
		// the TTL the registry renewed by, on the registry's clock only.
		if got := l.ExpiresAt.Sub(proofIssuedAt(t, l.Status)); got != step.want || l.State != "HELD" || l.TTLMs != 120000 {
			t.Fatalf("renew %v: state %s, renewed by %s (want %s), ttlMs %d", step.args, l.State, got, step.want, l.TTLMs)
		}
	}
	if r := run(t, "grant", "renew", "--lease", a.Lease, "--ttl", "500us", "--registry", reg.url, "--owner", "worker-a"); r.code != 2 {
		t.Fatalf("renew with a sub-millisecond TTL: exit %d %s", r.code, r.stderr)
	}
}

// cliLease is the part of the CLI's JSON lease output the test reads.
type cliLease struct {
	Lease     string    `json:"lease"`
	State     string    `json:"state"`
	TTLMs     uint64    `json:"ttlMs"`
	ExpiresAt time.Time `json:"expiresAt"`
	Status    string    `json:"status"`
}

// proofIssuedAt reads the iat of a lockStatus.v1 JWS (its signature is
// checked elsewhere; only the registry's time is wanted here).
func proofIssuedAt(t *testing.T, jws string) time.Time {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("status proof %q is not a compact JWS", jws)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		IssuedAt int64 `json:"iat"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(c.IssuedAt)
}
