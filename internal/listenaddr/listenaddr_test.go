package listenaddr_test

import (
	"net"
	"testing"

	"github.com/fencegate/fencegate/internal/listenaddr"
)

func TestDefault(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", "127.0.0.1:8780"},
		{"   ", "127.0.0.1:8780"},
		{"0.0.0.0", "0.0.0.0:8780"},
		{" 0.0.0.0\n", "0.0.0.0:8780"},
		{"::", "[::]:8780"},
		{"[::]", "[::]:8780"},
		{"10.1.2.3", "10.1.2.3:8780"},
	} {
		t.Setenv(listenaddr.EnvHost, tc.env)
		if got := listenaddr.Default("8780"); got != tc.want {
			t.Errorf("%s=%q: Default = %q, want %q", listenaddr.EnvHost, tc.env, got, tc.want)
		}
	}
}

// TestMalformedHostFailsValidation: a host with a port in it does not
// silently become another address; it makes one SplitHostPort refuses.
func TestMalformedHostFailsValidation(t *testing.T) {
	t.Setenv(listenaddr.EnvHost, "0.0.0.0:9999")
	if _, _, err := net.SplitHostPort(listenaddr.Default("8780")); err == nil {
		t.Fatalf("Default = %q parses as host:port", listenaddr.Default("8780"))
	}
}
