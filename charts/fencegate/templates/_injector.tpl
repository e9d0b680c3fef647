{{/* The injector's names, selector and checks. */}}
{{- define "fencegate.injector.fullname" -}}
{{- printf "%s-injector" (include "fencegate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fencegate.injector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fencegate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: injector
{{- end -}}

{{- define "fencegate.injector.tlsSecret" -}}
{{- default (printf "%s-tls" (include "fencegate.injector.fullname" .)) .Values.injector.tls.existingSecret -}}
{{- end -}}

{{- define "fencegate.injector.validate" -}}
{{- $i := .Values.injector -}}
{{- if and (not $i.tls.certManager.enabled) (not (and $i.tls.existingSecret $i.tls.caBundle)) -}}
{{- fail "injector: without injector.tls.certManager.enabled, set injector.tls.existingSecret (tls.crt, tls.key for the injector's Service name) and injector.tls.caBundle (the base64 PEM of its CA): the API server calls the webhook over TLS only" -}}
{{- end -}}
{{- if and $i.tls.certManager.enabled $i.tls.existingSecret -}}
{{- fail "injector.tls: existingSecret is for a certificate made without cert-manager; with injector.tls.certManager.enabled the chart's Certificate writes the Secret" -}}
{{- end -}}
{{- if eq (int $i.port) (int $i.healthPort) -}}
{{- fail "injector.port and injector.healthPort must differ" -}}
{{- end -}}
{{- end -}}

{{/* injector.yaml: what every injected sidecar looks like. */}}
{{- define "fencegate.injector.config" -}}
{{- $i := .Values.injector -}}
{{- $c := dict "image" (default (include "fencegate.image" .) $i.sidecar.image) "imagePullPolicy" .Values.image.pullPolicy "native" $i.native "port" (int .Values.sidecar.port) "healthPort" (int .Values.sidecar.healthPort) "adminPort" (int .Values.sidecar.adminPort) "resources" $i.sidecar.resources -}}
{{- toYaml $c -}}
{{- end -}}
