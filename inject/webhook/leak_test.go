package webhook_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain removes the validator built for the tests and fails them when
// a goroutine outlives them.
func TestMain(m *testing.M) {
	code := m.Run()
	if validatorBin != "" && validatorErr == nil && validatorSkip == "" {
		os.RemoveAll(filepath.Dir(validatorBin))
	}
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
