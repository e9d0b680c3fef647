package inject_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fencegate/fencegate/inject"
)

func base() map[string]string {
	return map[string]string{
		inject.AnnotationInject: "true",
		inject.AnnotationConfig: "billing-fencegate-sidecar",
		inject.AnnotationTLS:    "secret/billing-tls",
		inject.AnnotationData:   "claim/billing-store",
	}
}

func TestParseAnnotations(t *testing.T) {
	r, err := inject.ParseAnnotations(base())
	if err != nil {
		t.Fatal(err)
	}
	want := inject.Request{
		ConfigMap: "billing-fencegate-sidecar",
		Trust:     inject.Source{Kind: inject.SourceConfigMap, Name: inject.DefaultTrustConfigMap},
		TLS:       inject.Source{Kind: inject.SourceSecret, Name: "billing-tls"},
		Data:      inject.Source{Kind: inject.SourceClaim, Name: "billing-store"},
	}
	if r.ConfigMap != want.ConfigMap || r.Trust != want.Trust || r.TLS != want.TLS || r.Data != want.Data || r.Native != nil {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	a := base()
	a[inject.AnnotationNative] = "false"
	a[inject.AnnotationData] = "volume/fencegate-data"
	a[inject.AnnotationTLS] = "none"
	r, err = inject.ParseAnnotations(a)
	if err != nil {
		t.Fatal(err)
	}
	if r.Native == nil || *r.Native || r.Data != (inject.Source{Kind: inject.SourceVolume, Name: "fencegate-data"}) || r.TLS.Kind != inject.SourceNone {
		t.Fatalf("got %+v", r)
	}
	a = base()
	a[inject.AnnotationPostgresSecret] = "billing-postgres"
	a[inject.AnnotationPostgresTLS] = "billing-postgres-ca"
	r, err = inject.ParseAnnotations(a)
	if err != nil {
		t.Fatal(err)
	}
	if r.PostgresSecret != "billing-postgres" || r.PostgresTLS != "billing-postgres-ca" {
		t.Fatalf("postgres annotations: got %+v", r)
	}
}

func TestParseAnnotationsRefuses(t *testing.T) {
	cases := map[string]struct {
		key, value string // value "" with key: delete the key
		want       string
	}{
		"unknown key":         {"fencegate.io/confg", "x", "fencegate.io/confg is not an annotation"},
		"no config":           {inject.AnnotationConfig, "", "fencegate.io/config is required"},
		"bad config name":     {inject.AnnotationConfig, "Bad Name", `"Bad Name" is not an object name`},
		"bare secret":         {inject.AnnotationTLS, "secret", `"secret" is not one of`},
		"emptyDir with name":  {inject.AnnotationData, "emptyDir/x", `"emptyDir/x" is not one of`},
		"claim without name":  {inject.AnnotationData, "claim/", "fencegate.io/data is required"},
		"volume not a label":  {inject.AnnotationData, "volume/a.b", `"a.b" is not a volume name`},
		"trust claim":         {inject.AnnotationTrust, "claim/x", `"claim/x" is not one of configmap/NAME, secret/NAME`},
		"native yes":          {inject.AnnotationNative, "yes", `fencegate.io/native: "yes" is not "true" or "false"`},
		"bad admin secret":    {inject.AnnotationAdminSecret, "-x", `fencegate.io/admin-secret: "-x" is not an object name`},
		"bad postgres secret": {inject.AnnotationPostgresSecret, "Pg", `fencegate.io/postgres-secret: "Pg" is not an object name`},
		"postgres tls alone":  {inject.AnnotationPostgresTLS, "pg-ca", "fencegate.io/postgres-tls needs fencegate.io/postgres-secret"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := base()
			if c.value == "" {
				delete(a, c.key)
			} else {
				a[c.key] = c.value
			}
			_, err := inject.ParseAnnotations(a)
			if !errors.Is(err, inject.ErrAnnotation) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrAnnotation with %q", err, c.want)
			}
		})
	}
}

// TestEveryProblemAtOnce: two bad annotations, two messages.
func TestEveryProblemAtOnce(t *testing.T) {
	a := base()
	a[inject.AnnotationTLS] = "x"
	a[inject.AnnotationData] = "y"
	_, err := inject.ParseAnnotations(a)
	if err == nil || !strings.Contains(err.Error(), inject.AnnotationTLS) || !strings.Contains(err.Error(), inject.AnnotationData) {
		t.Fatalf("err %v, want both annotations named", err)
	}
}

// FuzzParseAnnotations: no panic on any value; an accepted request names
// only valid objects, a refusal wraps ErrAnnotation.
func FuzzParseAnnotations(f *testing.F) {
	for _, s := range []string{"claim/x", "secret/a", "emptyDir", "spiffe-csi", "none", "volume/v", "configmap/", "/", "", "claim/x/y", "\x00"} {
		f.Add("true", "cfg", s, s, s, "false")
	}
	f.Fuzz(func(t *testing.T, inj, cfg, trust, tls, data, native string) {
		a := map[string]string{
			inject.AnnotationInject: inj, inject.AnnotationConfig: cfg, inject.AnnotationTrust: trust,
			inject.AnnotationTLS: tls, inject.AnnotationData: data, inject.AnnotationNative: native,
		}
		if _, err := inject.Wanted(a); err != nil && !errors.Is(err, inject.ErrAnnotation) {
			t.Fatalf("Wanted: %v does not wrap ErrAnnotation", err)
		}
		r, err := inject.ParseAnnotations(a)
		if err != nil {
			if !errors.Is(err, inject.ErrAnnotation) {
				t.Fatalf("%v does not wrap ErrAnnotation", err)
			}
			return
		}
		for _, n := range []string{r.ConfigMap, r.Trust.Name, r.TLS.Name, r.Data.Name} {
			if n != "" && len(validation.IsDNS1123Subdomain(n)) > 0 {
				t.Fatalf("accepted %q, not an object name", n)
			}
		}
		if r.ConfigMap == "" || r.Data.Kind == "" || r.TLS.Kind == "" {
			t.Fatalf("accepted a request without config, data or tls: %+v", r)
		}
	})
}
