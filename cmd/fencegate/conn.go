package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/tlsfiles"
	"github.com/fencegate/fencegate/verify"
)

// connFlags are the flags of a command that talks to a registry.
type connFlags struct {
	url, owner, header, cert, key, ca, serverName, adminTokenFile string
}

// add registers the connection flags on fs; withAdmin adds
// --admin-token-file, for the commands that make admin calls.
func (c *connFlags) add(fs *pflag.FlagSet, withAdmin bool) {
	fs.StringVar(&c.url, "registry", envOr("FENCEGATE_REGISTRY", "http://127.0.0.1:8700"), "registry URL (env FENCEGATE_REGISTRY)")
	fs.StringVar(&c.owner, "owner", os.Getenv("FENCEGATE_OWNER"), "your identity, for a registry in header or insecure-dev mode (env FENCEGATE_OWNER)")
	fs.StringVar(&c.header, "identity-header", identity.DefaultHeader, "the header --owner is sent in")
	c.addTLS(fs, "")
	if withAdmin {
		fs.StringVar(&c.adminTokenFile, "admin-token-file", os.Getenv("FENCEGATE_ADMIN_TOKEN_FILE"), "file holding the registry's admin bearer token (env FENCEGATE_ADMIN_TOKEN_FILE)")
	}
}

// addTLS registers --cert, --key, --ca and --tls-server-name; what is
// prepended to each usage ("with --apply: ").
func (c *connFlags) addTLS(fs *pflag.FlagSet, what string) {
	fs.StringVar(&c.cert, "cert", os.Getenv("FENCEGATE_CERT"), what+"client certificate for mTLS; its SPIFFE ID is your identity (env FENCEGATE_CERT)")
	fs.StringVar(&c.key, "key", os.Getenv("FENCEGATE_KEY"), what+"client key for mTLS (env FENCEGATE_KEY)")
	fs.StringVar(&c.ca, "ca", os.Getenv("FENCEGATE_CA"), what+"CA file to trust for the registry's certificate (env FENCEGATE_CA)")
	fs.StringVar(&c.serverName, "tls-server-name", os.Getenv("FENCEGATE_TLS_SERVER_NAME"),
		what+"name the registry's certificate must hold, when it is not the host dialed (a kubectl port-forward to 127.0.0.1: the Service's DNS name) (env FENCEGATE_TLS_SERVER_NAME)")
}

// client builds the registry client of the flags.
func (c *connFlags) client() (*client.Client, error) {
	var opts []client.Option
	if c.cert != "" || c.ca != "" || c.serverName != "" || strings.HasPrefix(c.url, "https://") {
		opts = append(opts, client.WithTLS(tlsfiles.Client{CertFile: c.cert, KeyFile: c.key, CAFile: c.ca, ServerName: c.serverName}, tlsfiles.Reload{}))
	}
	if c.owner != "" {
		opts = append(opts, client.WithIdentityHeader(c.header, c.owner))
	}
	if c.adminTokenFile != "" {
		tok, err := os.ReadFile(c.adminTokenFile)
		if err != nil {
			return nil, withExit(exitUsage, fmt.Errorf("--admin-token-file: %w", err), "")
		}
		opts = append(opts, client.WithAdminToken(strings.TrimSpace(string(tok))))
	}
	cl, err := client.New(c.url, opts...)
	if err != nil {
		return nil, withExit(exitUsage, fmt.Errorf("--registry %q: %w", c.url, err), "")
	}
	return cl, nil
}

// target names the registry in messages.
func (c *connFlags) target() string { return "the registry at " + c.url }

// trustBundle loads a trust bundle from a file, or else fetches the
// registry's published one.
func trustBundle(ctx context.Context, path string, conn *connFlags, allowHS256 bool) (*verify.Bundle, error) {
	var set jwk.Set
	if path != "" {
		var err error
		if set, err = keys.LoadSet(path); err != nil {
			return nil, withExit(exitUsage, fmt.Errorf("--jwks: %w", err), "")
		}
	} else {
		c, err := conn.client()
		if err != nil {
			return nil, err
		}
		if set, err = c.JWKS(ctx); err != nil {
			return nil, callFailed(fmt.Errorf("fetching the trust bundle: %w", err), conn.target(), "")
		}
	}
	b, err := verify.NewBundle(set, verify.AllowList(allowHS256)...)
	if err != nil {
		return nil, fmt.Errorf("trust bundle: %w", err)
	}
	return b, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
