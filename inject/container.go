package inject

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Mount paths, the chart's (proxy.yaml names files under them).
const (
	pathConfig = "/etc/fencegate/config"
	pathData   = "/var/lib/fencegate"
	pathTrust  = "/etc/fencegate/trust"
	pathTLS    = "/etc/fencegate/tls"
	pathAdmin  = "/etc/fencegate/admin"
	pathRedis  = "/etc/fencegate/redis"
	// pathPostgres holds the DSN file (store.postgres.dsnFile),
	// pathPostgresTLS the database's CA and a client certificate
	// (store.postgres.tls).
	pathPostgres    = "/etc/fencegate/postgres"
	pathPostgresTLS = "/etc/fencegate/postgres-tls"
)

// emptyDirSizeLimit bounds an emptyDir data directory (a shared store's:
// it holds nothing the store's safety needs), as the chart does.
const emptyDirSizeLimit = "64Mi"

// sidecarContainer is the chart's "fencegate.sidecar.container".
func sidecarContainer(cfg Config, req Request, native bool) corev1.Container {
	c := corev1.Container{
		Name:            ContainerName,
		Image:           cfg.Image,
		ImagePullPolicy: cfg.ImagePullPolicy,
		Args:            []string{"proxy", "--config", pathConfig + "/proxy.yaml"},
		Ports: []corev1.ContainerPort{
			{Name: "fencegate", ContainerPort: cfg.Port, Protocol: corev1.ProtocolTCP},
			{Name: "fg-health", ContainerPort: cfg.HealthPort, Protocol: corev1.ProtocolTCP},
		},
		StartupProbe:    probe("/healthz", 2, 30),
		LivenessProbe:   probe("/healthz", 10, 3),
		ReadinessProbe:  probe("/readyz", 5, 3),
		Resources:       cfg.Resources,
		SecurityContext: securityContext(),
		VolumeMounts:    mounts(req),
	}
	if native {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return c
}

func probe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("fg-health")},
		},
		PeriodSeconds:    period,
		TimeoutSeconds:   2,
		FailureThreshold: failures,
	}
}

// securityContext is the chart's containerSecurityContext; not
// configurable: the sidecar needs nothing more.
func securityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](RunAsID),
		RunAsGroup:               ptr.To[int64](RunAsID),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func mounts(req Request) []corev1.VolumeMount {
	dataVolume := volData
	if req.Data.Kind == SourceVolume {
		dataVolume = req.Data.Name
	}
	m := []corev1.VolumeMount{
		{Name: volConfig, MountPath: pathConfig, ReadOnly: true},
		{Name: dataVolume, MountPath: pathData},
		{Name: volTrust, MountPath: pathTrust, ReadOnly: true},
	}
	if req.TLS.Kind != SourceNone {
		m = append(m, corev1.VolumeMount{Name: volTLS, MountPath: pathTLS, ReadOnly: true})
	}
	if req.AdminSecret != "" {
		m = append(m, corev1.VolumeMount{Name: volAdmin, MountPath: pathAdmin, ReadOnly: true})
	}
	if req.RedisSecret != "" {
		m = append(m, corev1.VolumeMount{Name: volRedis, MountPath: pathRedis, ReadOnly: true})
	}
	if req.PostgresSecret != "" {
		m = append(m, corev1.VolumeMount{Name: volPostgres, MountPath: pathPostgres, ReadOnly: true})
	}
	if req.PostgresTLS != "" {
		m = append(m, corev1.VolumeMount{Name: volPostgresTLS, MountPath: pathPostgresTLS, ReadOnly: true})
	}
	return m
}

// sidecarVolumes is the chart's "fencegate.sidecar.volumes".
func sidecarVolumes(req Request) []corev1.Volume {
	v := []corev1.Volume{{Name: volConfig, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: req.ConfigMap}},
	}}}
	switch req.Data.Kind {
	case SourceClaim:
		v = append(v, corev1.Volume{Name: volData, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: req.Data.Name},
		}})
	case SourceEmptyDir:
		v = append(v, corev1.Volume{Name: volData, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse(emptyDirSizeLimit))},
		}})
	}
	v = append(v, trustVolume(req.Trust))
	switch req.TLS.Kind {
	case SourceSecret:
		v = append(v, secretVolume(volTLS, req.TLS.Name))
	case SourceSPIFFECSI:
		v = append(v, corev1.Volume{Name: volTLS, VolumeSource: corev1.VolumeSource{
			CSI: &corev1.CSIVolumeSource{Driver: spiffeCSIDr, ReadOnly: ptr.To(true)},
		}})
	}
	if req.AdminSecret != "" {
		v = append(v, secretVolume(volAdmin, req.AdminSecret))
	}
	if req.RedisSecret != "" {
		v = append(v, secretVolume(volRedis, req.RedisSecret))
	}
	if req.PostgresSecret != "" {
		v = append(v, secretVolume(volPostgres, req.PostgresSecret))
	}
	if req.PostgresTLS != "" {
		v = append(v, secretVolume(volPostgresTLS, req.PostgresTLS))
	}
	return v
}

func trustVolume(s Source) corev1.Volume {
	if s.Kind == SourceSecret {
		return secretVolume(volTrust, s.Name)
	}
	return corev1.Volume{Name: volTrust, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}},
	}}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: ptr.To[int32](0o444)},
	}}
}

// operations adds the container (first of the init containers when
// native, so that it runs before the others and outlives the app; last of
// the containers otherwise), the volumes, fsGroup when the pod has none
// and its data is a claim (so the volume is writable by the sidecar), and
// the injected marker.
func operations(pod *corev1.Pod, cfg Config, req Request, native bool, volumes []corev1.Volume) []Operation {
	c := sidecarContainer(cfg, req, native)
	var ops []Operation
	switch {
	case native && len(pod.Spec.InitContainers) == 0:
		ops = append(ops, add("/spec/initContainers", []corev1.Container{c}))
	case native:
		ops = append(ops, add("/spec/initContainers/0", c))
	default:
		ops = append(ops, add("/spec/containers/-", c))
	}
	if len(pod.Spec.Volumes) == 0 {
		ops = append(ops, add("/spec/volumes", volumes))
	} else {
		for _, v := range volumes {
			ops = append(ops, add("/spec/volumes/-", v))
		}
	}
	if req.Data.Kind == SourceClaim || req.Data.Kind == SourceVolume {
		switch {
		case pod.Spec.SecurityContext == nil:
			ops = append(ops, add("/spec/securityContext", corev1.PodSecurityContext{FSGroup: ptr.To[int64](RunAsID)}))
		case pod.Spec.SecurityContext.FSGroup == nil:
			ops = append(ops, add("/spec/securityContext/fsGroup", int64(RunAsID)))
		}
	}
	return append(ops, add("/metadata/annotations/"+pointerEscape(AnnotationInjected), cfg.Image))
}
