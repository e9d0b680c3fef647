package authn

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
)

// Results of fencegate_proxy_registry_requests_total.
const (
	registryOK       = "ok"
	registryError    = "error"
	registryNotFound = "not_found"
)

// countedStatus is the sidecar's registry status source, counting each
// read by result in fencegate_proxy_registry_requests_total: ok (the
// registry answered with a status; the sidecar still verifies it),
// not_found (the registry does not know the grant: GRANT_NOT_HELD), error
// (no answer in registry.timeout, or a failure: REGISTRY_UNAVAILABLE).
type countedStatus struct {
	src StatusSource
	ctr *prometheus.CounterVec
}

// CountedStatus wraps src, the registry client the sidecar reads status
// from (proxy/server builds it), so that each read is counted in
// fencegate_proxy_registry_requests_total; the counter, every result at
// zero, is registered on reg. A status read stays beneath the fence core:
// Check calls it, and it calls only src.
func CountedStatus(src StatusSource, reg prometheus.Registerer) (StatusSource, error) {
	ctr := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegate_proxy_registry_requests_total",
		Help: "The sidecar's grant status reads from the registry (routes in status mode registry) by result: ok, not_found (the registry does not know the grant), error (no answer or a failure: REGISTRY_UNAVAILABLE).",
	}, []string{"result"})
	for _, r := range []string{registryOK, registryError, registryNotFound} {
		ctr.WithLabelValues(r)
	}
	if err := reg.Register(ctr); err != nil {
		return nil, err
	}
	return &countedStatus{src: src, ctr: ctr}, nil
}

// StatusByDigest reads from src and counts the result.
func (c *countedStatus) StatusByDigest(ctx context.Context, digest string) (*fencegate.Lease, error) {
	l, err := c.src.StatusByDigest(ctx, digest)
	var coded interface{ Code() fencegate.Code }
	switch {
	case err == nil:
		c.ctr.WithLabelValues(registryOK).Inc()
	case errors.As(err, &coded) && coded.Code() == fencegate.CodeNotFound:
		c.ctr.WithLabelValues(registryNotFound).Inc()
	default:
		c.ctr.WithLabelValues(registryError).Inc()
	}
	return l, err
}
