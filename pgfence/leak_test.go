package pgfence_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the crash child when asked (crash_test.go) and otherwise
// fails the package's tests when a goroutine outlives them.
func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	goleak.VerifyTestMain(m)
}
