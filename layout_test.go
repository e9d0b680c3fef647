package fencegate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageChecksForLeaks: every package of the module that has
// tests runs them under go.uber.org/goleak (a TestMain in leak_test.go,
// or goleak in a TestMain of its own), so no package's tests leave a
// goroutine behind, and no constructor's goroutine goes unnoticed.
func TestEveryPackageChecksForLeaks(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-f",
		"{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}", "github.com/fencegate/fencegate/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) < 10 {
		t.Fatalf("go list found only %d packages with tests", len(dirs))
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		found := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "go.uber.org/goleak") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s has tests but no goleak check (add a leak_test.go with goleak.VerifyTestMain)", dir)
		}
	}
}
