package identity

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// The two ways an operator's call is recognised on an admin surface (the
// sidecar's admin listener, the registry's admin routes), in one place so
// both check them alike.

// BearerMatches reports whether req carries "Authorization: Bearer <token>"
// with exactly token (compared in constant time). An empty token matches
// nothing.
func BearerMatches(req *http.Request, token string) bool {
	got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// FromLoopback reports whether req came from a loopback address.
func FromLoopback(req *http.Request) bool {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
