package listenaddr

import (
	"net"
	"os"
	"strings"
)

// EnvHost is the environment variable that replaces the host of the
// default inbound listen addresses.
const EnvHost = "FENCEGATE_LISTEN_HOST"

// DefaultHost is the host of the default listen addresses when EnvHost is
// unset or empty.
const DefaultHost = "127.0.0.1"

// Host is EnvHost's value (surrounding spaces and IPv6 brackets removed),
// or DefaultHost when it is unset or empty.
func Host() string {
	h := strings.TrimSpace(os.Getenv(EnvHost))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return DefaultHost
	}
	return h
}

// Default is Host() joined with port: "127.0.0.1:8780", "0.0.0.0:8780",
// "[::]:8780". A malformed FENCEGATE_LISTEN_HOST makes an address the
// configuration's validation refuses, never one on another host.
func Default(port string) string {
	h := Host()
	if strings.Contains(h, ":") && net.ParseIP(h) == nil {
		// "host:port" or garbage: keep it unparsable.
		return h + ":" + port
	}
	return net.JoinHostPort(h, port)
}
