// Package tlsfilestest makes certificates and certificate files for tests
// of TLS rotation: CAs and the leaves they issue, files rewritten in place
// and Kubernetes-style Secret volumes whose ..data symlink is swapped.
package tlsfilestest
