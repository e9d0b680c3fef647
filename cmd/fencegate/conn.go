package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
)

// connFlags are the flags of every command that talks to a registry.
type connFlags struct {
	url, owner, header, cert, key, ca, adminTokenFile string
}

func (c *connFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "registry", envOr("FENCEGATE_REGISTRY", "http://127.0.0.1:8700"), "registry URL (env FENCEGATE_REGISTRY)")
	fs.StringVar(&c.owner, "owner", os.Getenv("FENCEGATE_OWNER"), "identity to send in the identity header, for a registry in header or insecure-dev mode (env FENCEGATE_OWNER)")
	fs.StringVar(&c.header, "identity-header", identity.DefaultHeader, "identity header name used with --owner")
	fs.StringVar(&c.cert, "cert", os.Getenv("FENCEGATE_CERT"), "client certificate for mTLS (its SPIFFE ID is the owner)")
	fs.StringVar(&c.key, "key", os.Getenv("FENCEGATE_KEY"), "client key for mTLS")
	fs.StringVar(&c.ca, "ca", os.Getenv("FENCEGATE_CA"), "CA file to trust for the registry's certificate")
	fs.StringVar(&c.adminTokenFile, "admin-token-file", os.Getenv("FENCEGATE_ADMIN_TOKEN_FILE"), "file holding the admin bearer token (admin commands)")
}

func (c *connFlags) client() (*client.Client, error) {
	var opts []client.Option
	if c.cert != "" || c.ca != "" || strings.HasPrefix(c.url, "https://") {
		opts = append(opts, client.WithTLSFiles(c.cert, c.key, c.ca))
	}
	if c.owner != "" {
		opts = append(opts, client.WithIdentityHeader(c.header, c.owner))
	}
	if c.adminTokenFile != "" {
		tok, err := os.ReadFile(c.adminTokenFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithAdminToken(strings.TrimSpace(string(tok))))
	}
	return client.New(c.url, opts...)
}

// trustBundle loads a trust bundle from a file, or else fetches the
// registry's published one.
func trustBundle(ctx context.Context, path string, conn *connFlags, allowHS256 bool) (*verify.Bundle, error) {
	var set jwk.Set
	var err error
	if path != "" {
		set, err = keys.LoadSet(path)
	} else {
		var c *client.Client
		if c, err = conn.client(); err == nil {
			set, err = c.JWKS(ctx)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("trust bundle: %w", err)
	}
	return verify.NewBundle(set, verify.AllowList(allowHS256)...)
}
