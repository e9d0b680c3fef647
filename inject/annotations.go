package inject

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The pod annotations the injector reads. Every other key under Prefix is
// refused, so that a misspelt annotation is an error, not an ignored one.
const (
	Prefix = "fencegate.io/"

	// AnnotationInject: "true" injects the sidecar, "false" (or no
	// annotation) does not.
	AnnotationInject = Prefix + "inject"
	// AnnotationConfig: the ConfigMap holding proxy.yaml (required).
	AnnotationConfig = Prefix + "config"
	// AnnotationTrust: "configmap/NAME" or "secret/NAME", the trust bundle
	// (key jwks.json). Default: configmap/fencegate-trust.
	AnnotationTrust = Prefix + "trust"
	// AnnotationTLS: "secret/NAME" (tls.crt, tls.key, ca.crt),
	// "spiffe-csi" (csi-driver-spiffe writes the same files) or "none".
	// Required: mTLS is the default identity mode.
	AnnotationTLS = Prefix + "tls"
	// AnnotationData: the sidecar's data directory: "claim/NAME" (a
	// PersistentVolumeClaim, what a bolt store needs), "volume/NAME" (a
	// volume the pod already has, e.g. from a StatefulSet's
	// volumeClaimTemplates) or "emptyDir" (a Redis or PostgreSQL store).
	// Required.
	AnnotationData = Prefix + "data"
	// AnnotationNative: "true" or "false" overrides the injector's
	// native-sidecar decision for this pod.
	AnnotationNative = Prefix + "native"
	// AnnotationAdminSecret: a Secret whose key "token" is the admin API's
	// bearer token (proxy.yaml's admin.tokenFile /etc/fencegate/admin/token).
	AnnotationAdminSecret = Prefix + "admin-secret"
	// AnnotationRedisSecret: a Secret mounted at /etc/fencegate/redis (the
	// Redis password file proxy.yaml's store.redis.passwordFile names).
	AnnotationRedisSecret = Prefix + "redis-secret"
	// AnnotationPostgresSecret: a Secret mounted at /etc/fencegate/postgres
	// (the DSN file proxy.yaml's store.postgres.dsnFile names, e.g.
	// /etc/fencegate/postgres/dsn).
	AnnotationPostgresSecret = Prefix + "postgres-secret"
	// AnnotationPostgresTLS: a Secret mounted at
	// /etc/fencegate/postgres-tls (ca.crt, and tls.crt/tls.key for a
	// client certificate: the files proxy.yaml's store.postgres.tls names).
	AnnotationPostgresTLS = Prefix + "postgres-tls"
	// AnnotationInjected is set by the injector on the pods it changed
	// (value: the image it injected); a pod carrying it is not injected
	// again.
	AnnotationInjected = Prefix + "injected"
)

// DefaultTrustConfigMap is the trust bundle's ConfigMap when the pod
// names none: the one the operator guide creates.
const DefaultTrustConfigMap = "fencegate-trust"

// SourceKind says where a volume of the sidecar comes from.
type SourceKind string

// The volume sources an annotation can name.
const (
	SourceConfigMap SourceKind = "configmap"
	SourceSecret    SourceKind = "secret"
	SourceClaim     SourceKind = "claim"
	SourceVolume    SourceKind = "volume"
	SourceEmptyDir  SourceKind = "emptyDir"
	SourceSPIFFECSI SourceKind = "spiffe-csi"
	SourceNone      SourceKind = "none"
)

// Source is one annotation's "kind/NAME" (or a bare kind).
type Source struct {
	Kind SourceKind
	Name string
}

// Request is what a pod's annotations ask for.
type Request struct {
	ConfigMap      string
	Trust          Source
	TLS            Source
	Data           Source
	Native         *bool // nil: the injector decides
	AdminSecret    string
	RedisSecret    string
	PostgresSecret string
	PostgresTLS    string
}

var known = map[string]bool{
	AnnotationInject: true, AnnotationConfig: true, AnnotationTrust: true,
	AnnotationTLS: true, AnnotationData: true, AnnotationNative: true,
	AnnotationAdminSecret: true, AnnotationRedisSecret: true, AnnotationInjected: true,
	AnnotationPostgresSecret: true, AnnotationPostgresTLS: true,
}

// Wanted reports whether the annotations ask for the sidecar: false
// without fencegate.io/inject, an error when its value is neither "true"
// nor "false".
func Wanted(annotations map[string]string) (bool, error) {
	v, ok := annotations[AnnotationInject]
	if !ok {
		return false, nil
	}
	b, err := parseBool(AnnotationInject, v)
	return b, err
}

// ParseAnnotations reads the Request of a pod that asked for the sidecar
// and reports every problem at once, each naming its annotation.
func ParseAnnotations(annotations map[string]string) (Request, error) {
	var problems []error
	bad := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}
	for _, k := range sortedKeys(annotations) {
		if strings.HasPrefix(k, Prefix) && !known[k] {
			bad(fmt.Errorf("%w: %s is not an annotation of fencegate's injector (known: %s)", ErrAnnotation, k, knownList()))
		}
	}
	var r Request
	var err error
	r.ConfigMap, err = name(AnnotationConfig, annotations[AnnotationConfig], true)
	bad(err)
	r.Trust, err = source(AnnotationTrust, annotations, Source{SourceConfigMap, DefaultTrustConfigMap}, SourceConfigMap, SourceSecret)
	bad(err)
	r.TLS, err = source(AnnotationTLS, annotations, Source{}, SourceSecret, SourceSPIFFECSI, SourceNone)
	bad(err)
	r.Data, err = source(AnnotationData, annotations, Source{}, SourceClaim, SourceVolume, SourceEmptyDir)
	bad(err)
	if v, ok := annotations[AnnotationNative]; ok {
		b, err := parseBool(AnnotationNative, v)
		bad(err)
		r.Native = &b
	}
	r.AdminSecret, err = name(AnnotationAdminSecret, annotations[AnnotationAdminSecret], false)
	bad(err)
	r.RedisSecret, err = name(AnnotationRedisSecret, annotations[AnnotationRedisSecret], false)
	bad(err)
	r.PostgresSecret, err = name(AnnotationPostgresSecret, annotations[AnnotationPostgresSecret], false)
	bad(err)
	r.PostgresTLS, err = name(AnnotationPostgresTLS, annotations[AnnotationPostgresTLS], false)
	bad(err)
	if r.PostgresTLS != "" && r.PostgresSecret == "" {
		bad(fmt.Errorf("%w: %s needs %s (the DSN of the database it is the certificates of)", ErrAnnotation, AnnotationPostgresTLS, AnnotationPostgresSecret))
	}
	return r, errors.Join(problems...)
}

func parseBool(key, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s: %q is not \"true\" or \"false\"", ErrAnnotation, key, v)
}

// name checks an object name (a DNS-1123 subdomain, what ConfigMaps,
// Secrets and claims are named by).
func name(key, v string, required bool) (string, error) {
	if v == "" {
		if required {
			return "", fmt.Errorf("%w: %s is required", ErrAnnotation, key)
		}
		return "", nil
	}
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return "", fmt.Errorf("%w: %s: %q is not an object name: %s", ErrAnnotation, key, v, strings.Join(msgs, "; "))
	}
	return v, nil
}

// source parses "kind/NAME" or a bare kind (emptyDir, spiffe-csi, none)
// among the kinds allowed; def applies when the annotation is absent
// (a zero def: the annotation is required).
func source(key string, annotations map[string]string, def Source, allowed ...SourceKind) (Source, error) {
	v, ok := annotations[key]
	if !ok {
		if def.Kind == "" {
			return Source{}, fmt.Errorf("%w: %s is required (%s)", ErrAnnotation, key, forms(allowed))
		}
		return def, nil
	}
	kind, objName, hasName := strings.Cut(v, "/")
	for _, a := range allowed {
		if SourceKind(kind) != a {
			continue
		}
		bare := a == SourceEmptyDir || a == SourceSPIFFECSI || a == SourceNone
		if bare != !hasName {
			break
		}
		if bare {
			return Source{Kind: a}, nil
		}
		n, err := name(key, objName, true)
		if a == SourceVolume && err == nil {
			if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
				err = fmt.Errorf("%w: %s: %q is not a volume name: %s", ErrAnnotation, key, n, strings.Join(msgs, "; "))
			}
		}
		return Source{Kind: a, Name: n}, err
	}
	return Source{}, fmt.Errorf("%w: %s: %q is not one of %s", ErrAnnotation, key, v, forms(allowed))
}

func forms(allowed []SourceKind) string {
	var out []string
	for _, a := range allowed {
		switch a {
		case SourceEmptyDir, SourceSPIFFECSI, SourceNone:
			out = append(out, string(a))
		default:
			out = append(out, string(a)+"/NAME")
		}
	}
	return strings.Join(out, ", ")
}

func knownList() string {
	return strings.Join(sortedKeys(known), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
