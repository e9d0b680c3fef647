package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// holdFor acquires resource at reg as owner through the Go client (a
// minute's TTL, no background renewal) and returns the holder.
func holdFor(t *testing.T, regURL, owner, resource string) *client.Holder {
	t.Helper()
	c, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, owner))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hold(context.Background(), resource, client.WithTTL(time.Minute), client.WithoutBackground())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// leaseState is the state of lease at the registry.
func leaseState(t *testing.T, regURL, lease string) string {
	t.Helper()
	c, err := client.New(regURL)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Status(context.Background(), lease)
	if err != nil {
		t.Fatalf("status of %s: %v", lease, err)
	}
	return l.State
}

// normalizers replace what differs from run to run (times, IDs, ports)
// with a label of the same length, so aligned columns stay aligned.
var normalizers = []struct {
	re    *regexp.Regexp
	label string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "TIME"},
	{regexp.MustCompile(`rcpt-[0-9a-f]{32}`), "RECEIPT"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "HEX"},
	{regexp.MustCompile(`sha256:[A-Za-z0-9_-]+`), "DIGEST"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "ADDR"},
}

// normalize applies normalizers and replaces each of ids (lease IDs,
// operation roots) with a same-length label.
func normalize(s string, ids ...string) string {
	for i, id := range ids {
		if id != "" {
			s = strings.ReplaceAll(s, id, sameLength("ID"+strconv.Itoa(i), len(id)))
		}
	}
	for _, n := range normalizers {
		s = n.re.ReplaceAllStringFunc(s, func(m string) string { return sameLength(n.label, len(m)) })
	}
	return s
}

func sameLength(label string, n int) string {
	if len(label) >= n {
		return label[:n]
	}
	return label + strings.Repeat("_", n-len(label))
}

// checkGolden compares got with testdata/golden/name.txt (-update
// rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// wantExit fails unless r exited with code; it returns r for chaining.
func wantExit(t *testing.T, what string, r cliResult, code int) cliResult {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// TestLeaseCommands: lease list, get and revoke against a real registry
// over HTTP: the table (golden), the JSON, the revocation of one lease
// that frees its resource at a higher fence and leaves the others held,
// and the exit codes of a missing lease or resource and of bad input.
func TestLeaseCommands(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	a := holdFor(t, reg.URL, "worker-a", "item/1")
	b := holdFor(t, reg.URL, "worker-b", "item/2")
	ids := []string{a.LeaseID(), b.LeaseID()}

	r := wantExit(t, "lease list", runCLI(t, "lease", "list", "--registry", reg.URL), exitOK)
	checkGolden(t, "lease-list", normalize(r.stdout, ids...))

	r = wantExit(t, "lease list -o json", runCLI(t, "lease", "list", "--registry", reg.URL, "--prefix", "item/", "-o", "json"), exitOK)
	var listed []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil {
		t.Fatalf("lease list -o json: %v\n%s", err, r.stdout)
	}
	if len(listed) != 2 || listed[0]["lease"] != a.LeaseID() || listed[0]["owner"] != "worker-a" || listed[1]["state"] != fencegate.StateHeld {
		t.Errorf("lease list -o json: %v", listed)
	}

	r = wantExit(t, "lease get", runCLI(t, "lease", "get", "--registry", reg.URL, "--resource", "item/2"), exitOK)
	for _, w := range []string{"owner:            worker-b", "lease:            " + b.LeaseID(), "state:            HELD"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("lease get lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "statusProof") {
		t.Errorf("lease get prints a status proof it does not have:\n%s", r.stdout)
	}

	r = wantExit(t, "lease revoke", runCLI(t, "lease", "revoke", a.LeaseID(), "--reason", "test", "--registry", reg.URL), exitOK)
	want := fmt.Sprintf("revoked lease %s of item/1 (owner worker-a, fence %d)", a.LeaseID(), a.Fence())
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("lease revoke:\n%s\nwant %q", r.stdout, want)
	}
	r = wantExit(t, "lease revoke again", runCLI(t, "lease", "revoke", a.LeaseID(), "--registry", reg.URL), exitOK)
	if !strings.Contains(r.stdout, "had already ended (state REVOKED): nothing was changed") {
		t.Errorf("lease revoke of a revoked lease:\n%s", r.stdout)
	}
	r = wantExit(t, "lease list --state revoked", runCLI(t, "lease", "list", "--registry", reg.URL, "--state", "revoked", "-o", "json"), exitOK)
	listed = nil
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || listed[0]["lease"] != a.LeaseID() || listed[0]["endedAt"] == nil {
		t.Errorf("lease list --state revoked: %v %v", listed, err)
	}
	if st := leaseState(t, reg.URL, b.LeaseID()); st != fencegate.StateHeld {
		t.Errorf("the other lease after revoking one: %s", st)
	}
	next := holdFor(t, reg.URL, "worker-c", "item/1")
	if next.Fence() <= a.Fence() {
		t.Errorf("item/1's next fence %d is not above the revoked %d", next.Fence(), a.Fence())
	}

	wantExit(t, "revoke a missing lease", runCLI(t, "lease", "revoke", "lease-nope", "--registry", reg.URL), exitNotFound)
	r = wantExit(t, "get a resource never acquired", runCLI(t, "lease", "get", "--resource", "item/9", "--registry", reg.URL), exitNotFound)
	if !strings.Contains(r.stderr, "no lease of item/9") {
		t.Errorf("lease get of a resource never acquired:\n%s", r.stderr)
	}
	wantExit(t, "--state bogus", runCLI(t, "lease", "list", "--state", "bogus", "--registry", reg.URL), exitUsage)
	wantExit(t, "--resource and --prefix", runCLI(t, "lease", "list", "--resource", "a", "--prefix", "b", "--registry", reg.URL), exitUsage)
	wantExit(t, "revoke without an ID", runCLI(t, "lease", "revoke", "--registry", reg.URL), exitUsage)
	wantExit(t, "revoke does not take --ttl", runCLI(t, "lease", "revoke", "x", "--ttl", "5s", "--registry", reg.URL), exitUsage)
}

// TestLeaseRevokeCompletion: the shell completion of lease revoke offers
// the HELD leases' IDs, described by resource and owner, and not an ended
// one.
func TestLeaseRevokeCompletion(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	a := holdFor(t, reg.URL, "worker-a", "item/1")
	b := holdFor(t, reg.URL, "worker-b", "item/2")
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := wantExit(t, "__complete", runCLI(t, "__complete", "lease", "revoke", "--registry", reg.URL, ""), exitOK)
	if !strings.Contains(r.stdout, a.LeaseID()+"\titem/1 (worker-a)\n") || strings.Contains(r.stdout, b.LeaseID()) {
		t.Errorf("completion of lease revoke:\n%s", r.stdout)
	}
}

// TestLeaseListLimit: lease list --limit N prints the first N of more
// leases than a page, and without it every lease.
func TestLeaseListLimit(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	for i := range 3 {
		holdFor(t, reg.URL, "w", "job/"+strconv.Itoa(i))
	}
	for _, c := range []struct {
		args []string
		n    int
	}{
		{nil, 3}, {[]string{"--limit", "2"}, 2}, {[]string{"--limit", "1"}, 1},
		{[]string{"--page-size", "1"}, 3}, {[]string{"--page-size", "2"}, 3}, {[]string{"--page-size", "1", "--limit", "2"}, 2},
	} {
		r := wantExit(t, "lease list", runCLI(t, append([]string{"lease", "list", "--registry", reg.URL, "-o", "json"}, c.args...)...), exitOK)
		var listed []fencegate.ListedLease
		if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != c.n {
			t.Errorf("lease list %v: %d leases (%v), want %d", c.args, len(listed), err, c.n)
		}
	}
	wantExit(t, "--page-size 0", runCLI(t, "lease", "list", "--registry", reg.URL, "--page-size", "0"), exitUsage)
	r := wantExit(t, "an empty listing", runCLI(t, "lease", "list", "--registry", reg.URL, "--prefix", "none/"), exitOK)
	if !strings.HasSuffix(r.stdout, "\nno leases\n") {
		t.Errorf("an empty listing:\n%s", r.stdout)
	}
	r = wantExit(t, "an empty listing in JSON", runCLI(t, "lease", "list", "--registry", reg.URL, "--prefix", "none/", "-o", "json"), exitOK)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("an empty listing in JSON: %q", r.stdout)
	}
}

// TestAdminCommands: admin meta, epoch bump, fence-floor raise (never
// lowered: asking for less changes nothing and says so) and policies
// put, list and delete against a real registry; each prints what changed.
func TestAdminCommands(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	h := holdFor(t, reg.URL, "worker-a", "item/1")

	r := wantExit(t, "admin meta", runCLI(t, "admin", "meta", "--registry", reg.URL, "-o", "json"), exitOK)
	var m fencegate.Meta
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m.IssuerEpoch == 0 {
		t.Fatalf("admin meta -o json: %v\n%s", err, r.stdout)
	}
	// The grant above moved the registry's time to when it decided.
	if d := time.Since(m.Time); m.Time.IsZero() || d < -time.Minute || d > time.Minute {
		t.Errorf("admin meta -o json: time %v after a grant just now", m.Time)
	}
	r = wantExit(t, "admin meta", runCLI(t, "admin", "meta", "--registry", reg.URL), exitOK)
	if want := "time: " + m.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"); !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
		t.Errorf("admin meta:\n%s\nwant a line %q", r.stdout, want)
	}
	r = wantExit(t, "epoch bump", runCLI(t, "admin", "epoch", "bump", "--registry", reg.URL), exitOK)
	if want := fmt.Sprintf("issuer epoch raised from %d to %d", m.IssuerEpoch, m.IssuerEpoch+1); !strings.HasPrefix(r.stdout, want) {
		t.Errorf("epoch bump:\n%s\nwant %q", r.stdout, want)
	}
	if st := leaseState(t, reg.URL, h.LeaseID()); st != fencegate.StateRevoked {
		t.Errorf("a lease after the epoch bump: %s, want REVOKED", st)
	}

	r = wantExit(t, "fence-floor raise", runCLI(t, "admin", "fence-floor", "raise", "--to", "100", "--registry", reg.URL), exitOK)
	if want := fmt.Sprintf("the global fence floor raised from %d to 100", m.FenceFloor); !strings.HasPrefix(r.stdout, want) {
		t.Errorf("fence-floor raise:\n%s\nwant %q", r.stdout, want)
	}
	r = wantExit(t, "fence-floor raise lower", runCLI(t, "admin", "fence-floor", "raise", "--to", "50", "--registry", reg.URL, "-o", "json"), exitOK)
	var fr floorRaised
	if err := json.Unmarshal([]byte(r.stdout), &fr); err != nil || fr.Raised || fr.Before != 100 || fr.After != 100 || fr.To != 50 {
		t.Errorf("fence-floor raise --to 50 after 100: %+v %v", fr, err)
	}
	r = wantExit(t, "fence-floor raise lower, text", runCLI(t, "admin", "fence-floor", "raise", "--to", "50", "--registry", reg.URL), exitOK)
	if !strings.Contains(r.stdout, "is 100 already, not below 50: nothing was changed (a floor is never lowered)") {
		t.Errorf("fence-floor raise --to 50, text:\n%s", r.stdout)
	}
	r = wantExit(t, "resource floor", runCLI(t, "admin", "fence-floor", "raise", "--to", "500", "--resource", "item/7", "--registry", reg.URL), exitOK)
	if !strings.HasPrefix(r.stdout, "the fence floor of item/7 raised from 0 to 500") {
		t.Errorf("a resource's floor:\n%s", r.stdout)
	}
	if n := holdFor(t, reg.URL, "w", "item/7"); n.Fence() <= 500 {
		t.Errorf("a fence after the resource floor 500: %d", n.Fence())
	}
	if n := holdFor(t, reg.URL, "w", "item/8"); n.Fence() <= 100 {
		t.Errorf("a fence after the global floor 100: %d", n.Fence())
	}
	wantExit(t, "fence-floor raise without --to", runCLI(t, "admin", "fence-floor", "raise", "--registry", reg.URL), exitUsage)
	wantExit(t, "fence-floor raise --to -1", runCLI(t, "admin", "fence-floor", "raise", "--to", "-1", "--registry", reg.URL), exitUsage)

	r = wantExit(t, "policies put", runCLI(t, "admin", "policies", "put", "--pattern", "batch/*", "--allowed-owner", "worker-a",
		"--max-ttl", "1m", "--op-class", "write", "--registry", reg.URL), exitOK)
	if !strings.HasPrefix(r.stdout, "policy batch/* stored at generation ") {
		t.Errorf("policies put:\n%s", r.stdout)
	}
	c, _ := client.New(reg.URL, client.WithIdentityHeader(identity.DefaultHeader, "worker-b"))
	if _, err := c.Acquire(context.Background(), client.AcquireRequest{Resource: "batch/1", TTL: time.Second}); err == nil {
		t.Errorf("an owner the policy does not allow acquired batch/1")
	}
	r = wantExit(t, "policies list", runCLI(t, "admin", "policies", "list", "--registry", reg.URL), exitOK)
	checkGolden(t, "policies-list", normalize(r.stdout))
	wantExit(t, "policies delete", runCLI(t, "admin", "policies", "delete", "--pattern", "batch/*", "--registry", reg.URL), exitOK)
	r = wantExit(t, "policies list -o json", runCLI(t, "admin", "policies", "list", "--registry", reg.URL, "-o", "json"), exitOK)
	var ps []fencegate.Policy
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil || len(ps) != 1 || !ps[0].Deleted {
		t.Errorf("policies after delete: %+v %v", ps, err)
	}
	wantExit(t, "delete a missing policy", runCLI(t, "admin", "policies", "delete", "--pattern", "none/*", "--registry", reg.URL), exitNotFound)
	wantExit(t, "policies put without --pattern", runCLI(t, "admin", "policies", "put", "--registry", reg.URL), exitUsage)
	r = wantExit(t, "policies put of a malformed pattern", runCLI(t, "admin", "policies", "put", "--pattern", "a//b", "--registry", reg.URL), exitUsage)
	if !strings.Contains(r.stderr, "refused it, nothing was changed") {
		t.Errorf("policies put of a malformed pattern:\n%s", r.stderr)
	}
	wantExit(t, "policies put --min-ttl above --max-ttl", runCLI(t, "admin", "policies", "put", "--pattern", "x", "--min-ttl", "2m", "--max-ttl", "1m", "--registry", reg.URL), exitUsage)
	wantExit(t, "admin without a subcommand", runCLI(t, "admin"), exitUsage)
}

// serveWithAdminToken is a real registry whose admin routes need the
// bearer token "s3cret" (no loopback exemption).
func serveWithAdminToken(t *testing.T) *httptest.Server {
	t.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := keys.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Options{Backend: memory.NewBackend(), Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, reg)
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := keys.Bundle(false, key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: ident, JWKS: jwks, Admin: httpapi.Admin{Token: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestOperatorExitCodes: without the admin token exit 7 naming
// --admin-token-file (nothing changed); with it the call runs; a
// registry that is not there exits 4 saying nothing was sent; under -o
// json the error is one object with its class.
func TestOperatorExitCodes(t *testing.T) {
	reg := serveWithAdminToken(t)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	writeTestFile(t, good, "s3cret\n")
	writeTestFile(t, bad, "nope\n")
	for _, args := range [][]string{
		{"lease", "list"}, {"lease", "revoke", "lease-x"}, {"admin", "meta"}, {"admin", "epoch", "bump"},
		{"admin", "fence-floor", "raise", "--to", "5"}, {"admin", "policies", "list"},
	} {
		r := wantExit(t, strings.Join(args, " ")+" without the token", runCLI(t, append(args, "--registry", reg.URL)...), exitAuth)
		if !strings.Contains(r.stderr, "--admin-token-file") || !strings.Contains(r.stderr, "nothing was changed") {
			t.Errorf("%v without the token:\n%s", args, r.stderr)
		}
		wantExit(t, strings.Join(args, " ")+" with a wrong token", runCLI(t, append(args, "--registry", reg.URL, "--admin-token-file", bad)...), exitAuth)
	}
	r := wantExit(t, "admin meta with the token", runCLI(t, "admin", "meta", "--registry", reg.URL, "--admin-token-file", good), exitOK)
	if !strings.Contains(r.stdout, "issuerEpoch:") {
		t.Errorf("admin meta:\n%s", r.stdout)
	}
	wantExit(t, "a token file that is not there", runCLI(t, "admin", "meta", "--registry", reg.URL, "--admin-token-file", filepath.Join(dir, "none")), exitUsage)

	for _, args := range [][]string{{"lease", "list"}, {"admin", "epoch", "bump"}, {"lease", "get", "--resource", "a"}} {
		r := wantExit(t, strings.Join(args, " ")+" unreachable", runCLI(t, append(args, "--registry", "http://127.0.0.1:1")...), exitUnreachable)
		if !strings.Contains(r.stderr, "nothing was sent") || !strings.Contains(r.stderr, "--registry") {
			t.Errorf("%v unreachable:\n%s", args, r.stderr)
		}
	}
	r = wantExit(t, "-o json", runCLI(t, "-o", "json", "lease", "list", "--registry", reg.URL), exitAuth)
	var je map[string]jsonError
	if err := json.Unmarshal([]byte(r.stderr), &je); err != nil || je["error"].Class != "auth" || je["error"].Code != string(fencegate.CodeAdminRequired) {
		t.Errorf("-o json error: %v\n%s", err, r.stderr)
	}
}

// TestOperatorCommandsTLSServerName: through a port-forward (127.0.0.1, an
// address the registry's certificate does not name) every operator
// command fails its handshake, sends nothing (no epoch bumped, no lease
// revoked) and names --tls-server-name, exit 4; with the Service's name
// it runs.
func TestOperatorCommandsTLSServerName(t *testing.T) {
	reg, _ := registrytest.Serve(t)
	h := holdFor(t, reg.URL, "worker-a", "item/1")
	front, caFile, got := tlsFront(t, reg)
	for _, args := range [][]string{
		{"lease", "list"}, {"lease", "get", "--resource", "item/1"}, {"lease", "revoke", h.LeaseID()},
		{"admin", "meta"}, {"admin", "epoch", "bump"}, {"admin", "fence-floor", "raise", "--to", "9"}, {"admin", "policies", "list"},
	} {
		conn := []string{"--registry", front, "--ca", caFile}
		before := got.Load()
		r := wantExit(t, strings.Join(args, " ")+" without --tls-server-name", runCLI(t, append(args, conn...)...), exitUnreachable)
		if got.Load() != before || !strings.Contains(r.stderr, "nothing was sent") || !strings.Contains(r.stderr, "--tls-server-name") {
			t.Errorf("%v without --tls-server-name: %d requests arrived:\n%s", args, got.Load()-before, r.stderr)
		}
		wantExit(t, strings.Join(args, " ")+" with --tls-server-name",
			runCLI(t, append(args, append(conn, "--tls-server-name", "fencegate-registry.fencegate.svc")...)...), exitOK)
	}
}
