package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/keys"
)

func newKeysCmd(a *app) *cobra.Command {
	var gen keysGenerateOpts
	g := &cobra.Command{
		Use:   "generate --alg EdDSA|ES256|HS256 --out DIR [--force]",
		Short: "generate a signing key (signing.jwk) and its trust bundle (jwks.json)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gen.dir == "" {
				return usagef(cmd, "--out is required")
			}
			return keysGenerate(cmd.OutOrStdout(), &gen, a.json())
		},
	}
	g.Flags().StringVar(&gen.alg, "alg", "EdDSA", "signing algorithm: EdDSA (Ed25519), ES256 (P-256) or HS256 (shared-secret MAC)")
	g.Flags().StringVar(&gen.dir, "out", "", "directory for signing.jwk (private, 0600) and jwks.json (trust bundle, 0600)")
	g.Flags().BoolVar(&gen.force, "force", false, "replace an existing signing.jwk and jwks.json (the old key is lost: grants it signed no longer verify)")

	var jw keysJWKSOpts
	j := &cobra.Command{
		Use:   "jwks [--include-secrets] [--sign-with SIGNING_KEYFILE [--valid-for D]] KEYFILE_OR_JWKS...",
		Short: "build a trust bundle (JWKS, or a signed bundle) from keys",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef(cmd, "name at least one key or JWKS file; during a rotation name the old and the new key")
			}
			return keysJWKS(cmd.OutOrStdout(), &jw, args)
		},
	}
	j.Flags().BoolVar(&jw.secrets, "include-secrets", false, "include HS256 shared secrets (the bundle must then be kept secret)")
	j.Flags().StringVar(&jw.signWith, "sign-with", "", "write a signed bundle ("+fencegate.BundleSchema+", a compact JWS) signed with this private key (a signing.jwk): "+
		"sidecars that pinned its key pin the bundle's new keys when they load it")
	j.Flags().DurationVar(&jw.validFor, "valid-for", 7*24*time.Hour, "with --sign-with: how long sidecars take the signed bundle's new keys (its exp)")
	return groupCmd("keys", "generate signing keys and build trust bundles (JWKS)", g, j)
}

type keysGenerateOpts struct {
	alg, dir string
	force    bool
}

type keysJWKSOpts struct {
	secrets  bool
	signWith string
	validFor time.Duration
}

// generatedKey is keys generate's -o json document.
type generatedKey struct {
	Kid         string `json:"kid"`
	Alg         string `json:"alg"`
	SigningKey  string `json:"signingKey"`
	TrustBundle string `json:"trustBundle"`
	Replaced    bool   `json:"replaced"`
}

func keysGenerate(out io.Writer, o *keysGenerateOpts, asJSON bool) error {
	dir, force := &o.dir, &o.force
	alg, err := keys.ParseAlg(o.alg)
	if err != nil {
		return withExit(exitUsage, fmt.Errorf("--alg: %w", err), "")
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
	if asJSON {
		return printJSON(out, generatedKey{Kid: k.KeyID(), Alg: alg.String(), SigningKey: keyPath, TrustBundle: bundlePath, Replaced: *force})
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

func keysJWKS(out io.Writer, o *keysJWKSOpts, files []string) error {
	secrets, signWith, validFor := &o.secrets, &o.signWith, &o.validFor
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
			return withExit(exitUsage, errors.New("--valid-for must be positive"), "")
		}
	}
	var all []jwk.Key
	for _, p := range files {
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
		return withExit(exitUsage, errors.New("no key left to publish: HS256 secrets are only included with --include-secrets (and the bundle must then be kept secret)"), "")
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
