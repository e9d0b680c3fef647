package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// TestGolden: the help of the root and of a subcommand, and errors in
// text and JSON, are exactly the files of testdata/golden (go test
// -run TestGolden -update rewrites them after a deliberate change).
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"help-root", []string{"--help"}, exitOK},
		{"help-grant", []string{"help", "grant"}, exitOK},
		{"help-grant-acquire", []string{"grant", "acquire", "--help"}, exitOK},
		{"error-bad-flag", []string{"grant", "acquire", "--bogus"}, exitUsage},
		{"error-bad-flag-json", []string{"-o", "json", "grant", "acquire", "--bogus"}, exitUsage},
		{"error-unknown-command", []string{"grnt"}, exitUsage},
		{"error-unknown-command-json", []string{"grnt", "-o", "json"}, exitUsage},
		{"error-missing-resource", []string{"grant", "acquire"}, exitUsage},
		{"error-missing-resource-json", []string{"grant", "acquire", "-o", "json"}, exitUsage},
		{"help-lease", []string{"lease", "--help"}, exitOK},
		{"help-admin", []string{"help", "admin"}, exitOK},
		{"help-admin-fence-floor-raise", []string{"admin", "fence-floor", "raise", "--help"}, exitOK},
		{"help-receipts", []string{"receipts", "--help"}, exitOK},
		{"error-lease-revoke-no-id", []string{"lease", "revoke"}, exitUsage},
		{"error-receipts-nothing-json", []string{"receipts", "-o", "json"}, exitUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d", r.code, c.code)
			}
			got := "exit " + strconv.Itoa(r.code) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
			path := filepath.Join("testdata", "golden", c.name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%v differs from %s:\n--- got\n%s\n--- want\n%s", c.args, path, got, want)
			}
		})
	}
}
