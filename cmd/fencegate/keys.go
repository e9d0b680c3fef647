package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/keys"
)

func init() {
	register(command{name: "keys", summary: "generate signing keys and build trust bundles (JWKS)", run: runKeys})
}

func runKeys(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return &exitError{2, fmt.Errorf("usage: fencegate keys generate|jwks [flags]")}
	}
	switch args[0] {
	case "generate":
		return keysGenerate(args[1:], out)
	case "jwks":
		return keysJWKS(args[1:], out)
	}
	return &exitError{2, fmt.Errorf("unknown keys command %q (want generate or jwks)", args[0])}
}

func keysGenerate(args []string, out io.Writer) error {
	fs := newFlags("keys generate", "--alg EdDSA|ES256|HS256 --out DIR [--force]")
	algName := fs.String("alg", "EdDSA", "signing algorithm: EdDSA (Ed25519), ES256 (P-256) or HS256 (shared-secret MAC)")
	dir := fs.String("out", "", "directory for signing.jwk (private, 0600) and jwks.json (trust bundle, 0600)")
	force := fs.Bool("force", false, "replace an existing signing.jwk and jwks.json (the old key is lost: grants it signed no longer verify)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *dir == "" {
		return &exitError{2, fmt.Errorf("--out is required")}
	}
	alg, err := keys.ParseAlg(*algName)
	if err != nil {
		return &exitError{2, err}
	}
	keyPath := filepath.Join(*dir, "signing.jwk")
	bundlePath := filepath.Join(*dir, "jwks.json")
	if !*force {
		for _, p := range []string{keyPath, bundlePath} {
			if _, err := os.Lstat(p); err == nil {
				return errExists(p)
			} else if !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("keys generate: %w", err)
			}
		}
	}
	k, err := keys.Generate(alg, nil)
	if err != nil {
		return err
	}
	bundle, err := keys.Bundle(true, k)
	if err != nil {
		return err
	}
	if err := writeKeyFiles(*force, keyFile{keyPath, k}, keyFile{bundlePath, bundle}); err != nil {
		return err
	}
	fmt.Fprintf(out, "kid:          %s\nalg:          %s\nsigning key:  %s (private, mode 0600)\ntrust bundle: %s\n", k.KeyID(), alg, keyPath, bundlePath)
	if *force {
		fmt.Fprintln(out, "note: --force replaced any earlier key in "+*dir+"; grants signed by it no longer verify against this bundle")
	}
	if keys.IsSymmetric(k) {
		fmt.Fprintln(out, "note: HS256 is a MAC: the trust bundle holds the shared secret itself; distribute it to sidecars as a secret")
	}
	return nil
}

func keysJWKS(args []string, out io.Writer) error {
	fs := newFlags("keys jwks", "[--include-secrets] [--sign-with SIGNING_KEYFILE [--valid-for D]] KEYFILE_OR_JWKS...")
	secrets := fs.Bool("include-secrets", false, "include HS256 shared secrets (the bundle must then be kept secret)")
	signWith := fs.String("sign-with", "", "write a signed bundle ("+fencegate.BundleSchema+", a compact JWS) signed with this private key (a signing.jwk): "+
		"sidecars that pinned its key pin the bundle's new keys when they load it")
	validFor := fs.Duration("valid-for", 7*24*time.Hour, "with --sign-with: how long sidecars take the signed bundle's new keys (its exp)")
	if err := parse(fs, args, true); err != nil {
		return err
	}
	var signer *keys.Signer
	if *signWith != "" {
		k, err := keys.LoadSigningKey(*signWith)
		if err != nil {
			return err
		}
		if signer, err = keys.NewSigner(k); err != nil {
			return err
		}
		if *validFor <= 0 {
			return &exitError{2, errors.New("--valid-for must be positive")}
		}
	}
	if fs.NArg() == 0 {
		return &exitError{2, fmt.Errorf("name at least one key or JWKS file; during a rotation name the old and the new key")}
	}
	var all []jwk.Key
	for _, p := range fs.Args() {
		set, err := keys.LoadSet(p)
		if err != nil {
			return err
		}
		for i := 0; i < set.Len(); i++ {
			k, _ := set.Key(i)
			if k.KeyID() == "" || k.Algorithm().String() == "" {
				return fmt.Errorf("%s: every key needs kid and alg", p)
			}
			all = append(all, k)
		}
	}
	bundle, err := keys.Bundle(*secrets, all...)
	if err != nil {
		return err
	}
	if bundle.Len() == 0 {
		return &exitError{2, errors.New("no key left to publish: HS256 secrets are only included with --include-secrets (and the bundle must then be kept secret)")}
	}
	if signer == nil {
		return printJSON(out, bundle)
	}
	now := clock.Real().Now()
	tok, err := keys.SignBundle(signer, bundle, now, now.Add(*validFor))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", tok)
	return err
}
