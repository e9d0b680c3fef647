package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cert-manager.io/v1 objects the chart and docs/k8s render, with the
// fields of cert-manager's API that they may use (a strict decode refuses
// any other, as the API server's schema would refuse a misspelt one). The
// types are written here, not imported: cert-manager's module would bring
// its controllers' dependencies into this validator.

type certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              certificateSpec `json:"spec"`
}

type certificateSpec struct {
	SecretName     string          `json:"secretName"`
	SecretTemplate *secretTemplate `json:"secretTemplate,omitempty"`
	CommonName     string          `json:"commonName,omitempty"`
	Subject        *x509Subject    `json:"subject,omitempty"`
	DNSNames       []string        `json:"dnsNames,omitempty"`
	IPAddresses    []string        `json:"ipAddresses,omitempty"`
	URIs           []string        `json:"uris,omitempty"`
	EmailAddresses []string        `json:"emailAddresses,omitempty"`
	Duration       string          `json:"duration,omitempty"`
	RenewBefore    string          `json:"renewBefore,omitempty"`
	IsCA           bool            `json:"isCA,omitempty"`
	Usages         []string        `json:"usages,omitempty"`
	PrivateKey     *privateKey     `json:"privateKey,omitempty"`
	IssuerRef      issuerRef       `json:"issuerRef"`
}

type secretTemplate struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

type x509Subject struct {
	Organizations       []string `json:"organizations,omitempty"`
	OrganizationalUnits []string `json:"organizationalUnits,omitempty"`
	Countries           []string `json:"countries,omitempty"`
}

type privateKey struct {
	Algorithm      string `json:"algorithm,omitempty"`
	Size           int    `json:"size,omitempty"`
	Encoding       string `json:"encoding,omitempty"`
	RotationPolicy string `json:"rotationPolicy,omitempty"`
}

type issuerRef struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

type issuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              issuerSpec `json:"spec"`
}

type issuerSpec struct {
	SelfSigned *struct {
		CRLDistributionPoints []string `json:"crlDistributionPoints,omitempty"`
	} `json:"selfSigned,omitempty"`
	CA *struct {
		SecretName string `json:"secretName"`
	} `json:"ca,omitempty"`
}

var (
	certUsages = map[string]bool{
		"signing": true, "digital signature": true, "content commitment": true, "key encipherment": true,
		"key agreement": true, "data encipherment": true, "cert sign": true, "crl sign": true,
		"encipher only": true, "decipher only": true, "any": true, "server auth": true, "client auth": true,
		"code signing": true, "email protection": true, "s/mime": true, "ipsec end system": true,
		"ipsec tunnel": true, "ipsec user": true, "timestamping": true, "ocsp signing": true,
		"microsoft sgc": true, "netscape sgc": true,
	}
	keyAlgorithms = map[string]bool{"RSA": true, "ECDSA": true, "Ed25519": true}
)
