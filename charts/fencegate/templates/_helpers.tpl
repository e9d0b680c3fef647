{{/*
Names, labels and the image. Every helper takes the chart's root context
(from a parent chart: .Subcharts.fencegate).
*/}}

{{- define "fencegate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fencegate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fencegate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "fencegate.labels" -}}
helm.sh/chart: {{ include "fencegate.chart" . }}
app.kubernetes.io/name: {{ include "fencegate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fencegate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The registry's names and selector. */}}
{{- define "fencegate.registry.fullname" -}}
{{- printf "%s-registry" (include "fencegate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fencegate.registry.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fencegate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: registry
{{- end -}}

{{- define "fencegate.registry.serviceAccountName" -}}
{{- if .Values.registry.serviceAccount.create -}}
{{- default (include "fencegate.registry.fullname" .) .Values.registry.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.registry.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "fencegate.registry.tlsSecret" -}}
{{- default (printf "%s-tls" (include "fencegate.registry.fullname" .)) .Values.registry.tls.existingSecret -}}
{{- end -}}

{{/* The URL the sidecar reaches the registry at. */}}
{{- define "fencegate.registry.url" -}}
{{- if .Values.sidecar.registry.url -}}
{{- .Values.sidecar.registry.url -}}
{{- else if .Values.registry.enabled -}}
{{- printf "%s://%s.%s.svc:%d" (ternary "https" "http" .Values.registry.tls.enabled) (include "fencegate.registry.fullname" .) .Release.Namespace (int .Values.registry.service.port) -}}
{{- end -}}
{{- end -}}

{{/* The sidecar's object names. */}}
{{- define "fencegate.sidecar.fullname" -}}
{{- printf "%s-sidecar" (include "fencegate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fencegate.sidecar.pvcName" -}}
{{- default (printf "%s-store" (include "fencegate.sidecar.fullname" .)) .Values.sidecar.persistence.existingClaim -}}
{{- end -}}

{{/* image: repository:tag, or repository@digest. */}}
{{- define "fencegate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) -}}
{{- end -}}
{{- end -}}

{{/*
The container security context, refused unless it keeps the container
non-root, read-only, without privilege escalation and without capabilities.
*/}}
{{- define "fencegate.containerSecurityContext" -}}
{{- $sc := .Values.containerSecurityContext -}}
{{- if not $sc.runAsNonRoot -}}
{{- fail "containerSecurityContext.runAsNonRoot must be true: fencegate runs as uid 65532" -}}
{{- end -}}
{{- if not $sc.readOnlyRootFilesystem -}}
{{- fail "containerSecurityContext.readOnlyRootFilesystem must be true: fencegate writes only to its data volume" -}}
{{- end -}}
{{- if ne (toString $sc.allowPrivilegeEscalation) "false" -}}
{{- fail "containerSecurityContext.allowPrivilegeEscalation must be false" -}}
{{- end -}}
{{- if not (has "ALL" ((($sc.capabilities).drop) | default list)) -}}
{{- fail "containerSecurityContext.capabilities.drop must contain ALL" -}}
{{- end -}}
{{- if (($sc.capabilities).add) -}}
{{- fail "containerSecurityContext.capabilities.add must be empty: fencegate needs no capability" -}}
{{- end -}}
{{- toYaml $sc -}}
{{- end -}}

{{/*
fencegate.ownedKeys fails when a free-form config block sets a key the
chart owns. Called with (dict "config" MAP "keys" LIST "where" NAME).
Keys are dotted paths of at most two levels.
*/}}
{{- define "fencegate.ownedKeys" -}}
{{- $cfg := .config | default dict -}}
{{- range .keys -}}
{{- $parts := splitList "." . -}}
{{- if eq (len $parts) 1 -}}
{{- if hasKey $cfg (index $parts 0) -}}
{{- fail (printf "%s.%s is set by the chart (see the values next to %s); remove it from %s" $.where . $.where $.where) -}}
{{- end -}}
{{- else -}}
{{- $sub := get $cfg (index $parts 0) -}}
{{- if and (kindIs "map" $sub) (hasKey $sub (index $parts 1)) -}}
{{- fail (printf "%s.%s is set by the chart (see the values next to %s); remove it from %s" $.where . $.where $.where) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
