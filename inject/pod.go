package inject

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Outcome is what Plan decided for a pod.
type Outcome int

const (
	// NotRequested: the pod has no fencegate.io/inject: "true".
	NotRequested Outcome = iota
	// AlreadyInjected: the pod already has a fencegate container (the
	// injector's, or one of its own); nothing is added twice.
	AlreadyInjected
	// Injected: the operations add the sidecar.
	Injected
)

func (o Outcome) String() string {
	switch o {
	case NotRequested:
		return "not requested"
	case AlreadyInjected:
		return "already injected"
	case Injected:
		return "injected"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ContainerName is the sidecar container's name (as the chart names it).
const ContainerName = "fencegate"

// Volume names of the sidecar (the chart's).
const (
	volConfig   = "fencegate-config"
	volData     = "fencegate-data"
	volTrust    = "fencegate-trust"
	volTLS      = "fencegate-tls"
	volAdmin    = "fencegate-admin"
	volRedis    = "fencegate-redis"
	volPostgres = "fencegate-postgres"
	// volPostgresTLS is the database's CA and client certificate.
	volPostgresTLS = "fencegate-postgres-tls"
	spiffeCSIDr    = "spiffe.csi.cert-manager.io"
)

// Plan decides whether the pod gets the sidecar and returns the JSON
// patch operations that add it. clusterNative is the injector's decision
// for the cluster (Config.Native resolved at start); the pod's
// fencegate.io/native may override it, but not ask for a native sidecar
// where the cluster has none. A pod that asks for the sidecar and cannot
// have it gets an error (the webhook denies it, with the message).
func Plan(pod *corev1.Pod, cfg Config, clusterNative bool) (Outcome, []Operation, error) {
	wanted, err := Wanted(pod.Annotations)
	if err != nil || !wanted {
		return NotRequested, nil, err
	}
	if hasContainer(pod, ContainerName) {
		return AlreadyInjected, nil, nil
	}
	if _, ok := pod.Annotations[AnnotationInjected]; ok {
		// The marker without the container: copied from another pod, or
		// set by hand; the pod asked for the sidecar and would run without.
		return NotRequested, nil, fmt.Errorf("%w: the pod carries %s but has no %s container; remove the annotation", ErrConflict, AnnotationInjected, ContainerName)
	}
	req, err := ParseAnnotations(pod.Annotations)
	if err != nil {
		return NotRequested, nil, err
	}
	native := clusterNative
	if req.Native != nil {
		if *req.Native && !clusterNative {
			return NotRequested, nil, fmt.Errorf("%w: %s: \"true\", but the injector runs regular sidecars here (native %s; native sidecars need Kubernetes 1.29)", ErrNative, AnnotationNative, cfg.Native)
		}
		native = *req.Native
	}
	volumes := sidecarVolumes(req)
	if err := conflicts(pod, cfg, req, volumes); err != nil {
		return NotRequested, nil, err
	}
	return Injected, operations(pod, cfg, req, native, volumes), nil
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// conflicts refuses a pod whose volumes or ports collide with the
// sidecar's, and one whose fencegate.io/data names a volume it lacks (a
// StatefulSet's claim templates are among the pod's volumes by the time
// it is admitted).
func conflicts(pod *corev1.Pod, cfg Config, req Request, volumes []corev1.Volume) error {
	var problems []error
	have := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		have[v.Name] = true
	}
	for _, v := range volumes {
		if have[v.Name] {
			problems = append(problems, fmt.Errorf("%w: the pod already has a volume named %s", ErrConflict, v.Name))
		}
	}
	if req.Data.Kind == SourceVolume && !have[req.Data.Name] {
		problems = append(problems, fmt.Errorf("%w: %s: the pod has no volume %s", ErrAnnotation, AnnotationData, req.Data.Name))
	}
	ports := map[int32]bool{cfg.Port: true, cfg.HealthPort: true, cfg.AdminPort: true}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if ports[p.ContainerPort] {
					problems = append(problems, fmt.Errorf("%w: container %s declares port %d, which the sidecar uses (ports %d, %d and %d on 127.0.0.1)", ErrConflict, c.Name, p.ContainerPort, cfg.Port, cfg.HealthPort, cfg.AdminPort))
				}
			}
		}
	}
	return errors.Join(problems...)
}
