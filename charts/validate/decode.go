package main

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kinds maps apiVersion and kind to a new typed object. A document of any
// other kind is refused: the chart renders nothing else.
var kinds = map[string]func() any{
	"v1/ConfigMap":                       func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                          func() any { return &corev1.Secret{} },
	"v1/Service":                         func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                  func() any { return &corev1.ServiceAccount{} },
	"v1/PersistentVolumeClaim":           func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/Pod":                             func() any { return &corev1.Pod{} },
	"apps/v1/Deployment":                 func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                func() any { return &appsv1.StatefulSet{} },
	"apps/v1/DaemonSet":                  func() any { return &appsv1.DaemonSet{} },
	"batch/v1/Job":                       func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":      func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return &networkingv1.NetworkPolicy{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any {
		return &autoscalingv2.HorizontalPodAutoscaler{}
	},
	"rbac.authorization.k8s.io/v1/Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"monitoring.coreos.com/v1/ServiceMonitor":  func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PodMonitor":      func() any { return &monitoringv1.PodMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":  func() any { return &monitoringv1.PrometheusRule{} },
	"admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": func() any {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	},
	"cert-manager.io/v1/Certificate":   func() any { return &certificate{} },
	"cert-manager.io/v1/Issuer":        func() any { return &issuer{} },
	"cert-manager.io/v1/ClusterIssuer": func() any { return &issuer{} },
}

// validateDoc decodes one document strictly into its type and runs the
// checks of its kind.
func validateDoc(doc []byte) []string {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return []string{fmt.Sprintf("not a Kubernetes object: %v", err)}
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return []string{"document without apiVersion or kind"}
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return []string{fmt.Sprintf("%s %s: not a kind this validator knows", tm.APIVersion, tm.Kind)}
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return []string{fmt.Sprintf("%s: strict decoding: %v", tm.Kind, err)}
	}
	var problems []string
	c := &checker{add: func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf(format, a...))
	}}
	c.object(tm.Kind, obj)
	return problems
}
