package registrytest

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
)

// Serve starts a real registry for a test of its clients: the memory
// backend, an Ed25519 signing key, callers identified by the insecure
// identity header, loopback admin calls allowed, served over HTTP until
// the test ends (Run included). It returns the server (a test may close
// it early; closing it again at cleanup is harmless) and the path of the
// trust bundle file a sidecar verifies its grants with.
func Serve(tb testing.TB) (srv *httptest.Server, bundle string) {
	tb.Helper()
	key, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := keys.NewSigner(key)
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := registry.New(registry.Options{Backend: memory.NewBackend(), Signer: signer, MinTTL: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	Start(tb, reg)
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		tb.Fatal(err)
	}
	jwks, err := keys.Bundle(false, key)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: ident, JWKS: jwks, Admin: httpapi.Admin{AllowLoopback: true}})
	if err != nil {
		tb.Fatal(err)
	}
	srv = httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	bundle = filepath.Join(tb.TempDir(), "jwks.json")
	if err := keys.Save(bundle, jwks); err != nil {
		tb.Fatal(err)
	}
	return srv, bundle
}
