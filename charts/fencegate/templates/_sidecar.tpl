{{/*
The sidecar's named templates. Each takes the fencegate chart's root
context: `.` inside this chart, `.Subcharts.fencegate` from a parent chart
that depends on it. In the workload's pod template:

  initContainers:                       # native sidecar (Kubernetes >= 1.29)
    {{- include "fencegate.sidecar.container" .Subcharts.fencegate | nindent 8 }}
  containers:                           # (or here, with sidecar.native false)
    - name: app ...                     # listens on 127.0.0.1 only
  volumes:
    {{- include "fencegate.sidecar.volumes" .Subcharts.fencegate | nindent 8 }}

and, for a workload whose replica count is not sidecar.workload.replicas:

  {{- include "fencegate.sidecar.checkReplicas" (dict "ctx" .Subcharts.fencegate "replicas" .Values.replicaCount) }}
*/}}

{{/*
fencegate.sidecar.checkReplicas fails the render when a workload of more
than one replica would run sidecars on a local (bolt) store: each pod would
keep its own highest fences, so a stale owner refused by one pod would be
accepted by another. Redis and PostgreSQL stores are shared by every
replica. Called with (dict "ctx" ROOT "replicas" N).
*/}}
{{- define "fencegate.sidecar.checkReplicas" -}}
{{- $backend := .ctx.Values.sidecar.store.backend | default "bolt" -}}
{{- if and (gt (int .replicas) 1) (not (has $backend (list "redis" "postgres"))) -}}
{{- fail (printf "sidecar: the workload runs %d replicas but sidecar.store.backend is %q: a local store keeps the fences of one pod only, so several replicas must share sidecar.store.backend redis or postgres" (int .replicas) $backend) -}}
{{- end -}}
{{- end -}}

{{/* The checks every sidecar template runs first. */}}
{{- define "fencegate.sidecar.validate" -}}
{{- $s := .Values.sidecar -}}
{{- if not $s.workload.name -}}
{{- fail "sidecar.workload.name is required: it names the sidecar's objects and the service a bolt store claims" -}}
{{- end -}}
{{- include "fencegate.sidecar.checkReplicas" (dict "ctx" . "replicas" $s.workload.replicas) -}}
{{- if not (has $s.store.backend (list "bolt" "redis" "postgres")) -}}
{{- fail (printf "sidecar.store.backend: %q is not bolt, redis or postgres" $s.store.backend) -}}
{{- end -}}
{{- if and (eq $s.store.backend "redis") (not $s.store.redis.address) -}}
{{- fail "sidecar.store.redis.address is required with sidecar.store.backend redis (host:port of the Redis primary)" -}}
{{- end -}}
{{- if eq $s.store.backend "postgres" -}}
{{- $pg := $s.store.postgres -}}
{{- if not $pg.existingSecret -}}
{{- fail "sidecar.store.postgres.existingSecret is required with sidecar.store.backend postgres (a Secret holding the DSN, mounted as the file store.postgres.dsnFile names; the chart never writes the DSN into the ConfigMap)" -}}
{{- end -}}
{{- if and (gt (int $pg.maxConns) 0) (gt (int $pg.minConns) (int $pg.maxConns)) -}}
{{- fail (printf "sidecar.store.postgres.minConns: %d is above maxConns %d" (int $pg.minConns) (int $pg.maxConns)) -}}
{{- end -}}
{{- if and $pg.tls.clientCertificate (not $pg.tls.existingSecret) -}}
{{- fail "sidecar.store.postgres.tls.clientCertificate needs tls.existingSecret (the Secret holding tls.crt and tls.key)" -}}
{{- end -}}
{{- end -}}
{{- if not (or $s.trust.existingSecret $s.trust.existingConfigMap) -}}
{{- fail "sidecar.trust.existingSecret (or existingConfigMap) is required: the trust bundle (the registry's JWK set) that grants are verified against" -}}
{{- end -}}
{{- if and $s.trust.existingSecret $s.trust.existingConfigMap -}}
{{- fail "sidecar.trust: set existingSecret or existingConfigMap, not both" -}}
{{- end -}}
{{- if and $s.tls.enabled (not $s.tls.existingSecret) (not $s.tls.spiffeCSI) -}}
{{- fail "sidecar.tls.existingSecret (or sidecar.tls.spiffeCSI) is required when sidecar.tls.enabled (tls.crt, tls.key, ca.crt)" -}}
{{- end -}}
{{- if and $s.tls.existingSecret $s.tls.spiffeCSI -}}
{{- fail "sidecar.tls: set existingSecret or spiffeCSI, not both" -}}
{{- end -}}
{{- if and (eq ((($s.config).identity).mode | default "mtls") "mtls") (not $s.tls.enabled) -}}
{{- fail "sidecar.config.identity.mode mtls needs sidecar.tls.enabled (the client certificate is the caller's identity)" -}}
{{- end -}}
{{- if not (include "fencegate.registry.url" .) -}}
{{- fail "sidecar.registry.url is required (or registry.enabled): the store's progress is anchored at the registry, and a bolt store claims its service there" -}}
{{- end -}}
{{- if and $s.persistence.claimTemplate $s.persistence.existingClaim -}}
{{- fail "sidecar.persistence: claimTemplate and existingClaim exclude each other" -}}
{{- end -}}
{{- if eq (int $s.port) (int $s.healthPort) -}}
{{- fail "sidecar.port and sidecar.healthPort must differ" -}}
{{- end -}}
{{- if or (eq (int $s.adminPort) (int $s.port)) (eq (int $s.adminPort) (int $s.healthPort)) -}}
{{- fail "sidecar.adminPort must differ from sidecar.port and sidecar.healthPort" -}}
{{- end -}}
{{- include "fencegate.ownedKeys" (dict "config" $s.config "keys" (list "listen" "admin" "health" "tls" "dataDir" "store" "trust.bundle" "registry") "where" "sidecar.config") -}}
{{- end -}}

{{/*
The sidecar's proxy.yaml: sidecar.config with the keys the chart owns.
The admin listener is always on 127.0.0.1.
*/}}
{{- define "fencegate.sidecar.config" -}}
{{- include "fencegate.sidecar.validate" . -}}
{{- $s := .Values.sidecar -}}
{{- $c := deepCopy ($s.config | default dict) -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%d" (int $s.port)) -}}
{{- $_ = set $c "health" (dict "listen" (printf "0.0.0.0:%d" (int $s.healthPort))) -}}
{{- $admin := dict "listen" (printf "127.0.0.1:%d" (int $s.adminPort)) -}}
{{- if $s.admin.existingSecret -}}
{{- $_ = set $admin "tokenFile" (printf "/etc/fencegate/admin/%s" $s.admin.key) -}}
{{- end -}}
{{- $_ = set $c "admin" $admin -}}
{{- $_ = set $c "dataDir" "/var/lib/fencegate" -}}
{{- if $s.tls.enabled -}}
{{- $tls := dict "certFile" "/etc/fencegate/tls/tls.crt" "keyFile" "/etc/fencegate/tls/tls.key" -}}
{{- if eq ((($s.config).identity).mode | default "mtls") "mtls" -}}
{{- $_ = set $tls "clientCAFile" "/etc/fencegate/tls/ca.crt" -}}
{{- end -}}
{{- $_ = set $c "tls" $tls -}}
{{- end -}}
{{- $trust := deepCopy (get $c "trust" | default dict) -}}
{{- $_ = set $trust "bundle" (printf "/etc/fencegate/trust/%s" $s.trust.key) -}}
{{- $_ = set $c "trust" $trust -}}
{{- $regURL := include "fencegate.registry.url" . -}}
{{- if $regURL -}}
{{- $reg := dict "url" $regURL -}}
{{- if $s.tls.enabled -}}
{{- $_ = set $reg "certFile" "/etc/fencegate/tls/tls.crt" -}}
{{- $_ = set $reg "keyFile" "/etc/fencegate/tls/tls.key" -}}
{{- $_ = set $reg "caFile" "/etc/fencegate/tls/ca.crt" -}}
{{- end -}}
{{- with $s.registry.timeout -}}
{{- $_ = set $reg "timeout" . -}}
{{- end -}}
{{- $_ = set $c "registry" $reg -}}
{{- end -}}
{{- $store := dict "backend" $s.store.backend "service" (default $s.workload.name $s.store.service) -}}
{{- with $s.store.identity }}{{ $_ = set $store "identity" . }}{{ end -}}
{{- if eq $s.store.backend "bolt" -}}
{{- $_ = set $store "path" "/var/lib/fencegate/store.db" -}}
{{- $_ = set $store "claimTTL" $s.store.claimTTL -}}
{{- else if eq $s.store.backend "postgres" -}}
{{- $_ = set $store "postgres" (include "fencegate.sidecar.postgresConfig" $s.store.postgres | fromYaml) -}}
{{- else -}}
{{- $rd := $s.store.redis -}}
{{- $redis := dict "addr" $rd.address "db" (int $rd.db) "prefix" $rd.prefix "minReplicas" (int $rd.minReplicas) "replicaTimeout" $rd.replicaTimeout -}}
{{- with $rd.username }}{{ $_ = set $redis "username" . }}{{ end -}}
{{- with $rd.timeout }}{{ $_ = set $redis "timeout" . }}{{ end -}}
{{- if $rd.existingSecret -}}
{{- $_ = set $redis "passwordFile" (printf "/etc/fencegate/redis/%s" $rd.existingSecretKey) -}}
{{- end -}}
{{- if $rd.tls.enabled -}}
{{- $rtls := dict "enabled" true -}}
{{- if $rd.tls.existingSecret -}}
{{- $_ = set $rtls "caFile" "/etc/fencegate/redis-tls/ca.crt" -}}
{{- if $rd.tls.clientCertificate -}}
{{- $_ = set $rtls "certFile" "/etc/fencegate/redis-tls/tls.crt" -}}
{{- $_ = set $rtls "keyFile" "/etc/fencegate/redis-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- with $rd.tls.serverName }}{{ $_ = set $rtls "serverName" . }}{{ end -}}
{{- $_ = set $redis "tls" $rtls -}}
{{- end -}}
{{- $_ = set $store "redis" $redis -}}
{{- end -}}
{{- $_ = set $c "store" $store -}}
{{- toYaml $c -}}
{{- end -}}

{{/*
proxy.yaml's store.postgres from sidecar.store.postgres (its argument): the
DSN and the TLS files where fencegate.sidecar.container mounts their
Secrets (the injector mounts fencegate.io/postgres-secret and
fencegate.io/postgres-tls at the same paths).
*/}}
{{- define "fencegate.sidecar.postgresConfig" -}}
{{- $pg := dict "dsnFile" (printf "/etc/fencegate/postgres/%s" .existingSecretKey) -}}
{{- with .schema }}{{ $_ := set $pg "schema" . }}{{ end -}}
{{- if gt (int .maxConns) 0 }}{{ $_ := set $pg "maxConns" (int .maxConns) }}{{ end -}}
{{- if gt (int .minConns) 0 }}{{ $_ := set $pg "minConns" (int .minConns) }}{{ end -}}
{{- with .connectTimeout }}{{ $_ := set $pg "connectTimeout" . }}{{ end -}}
{{- with .statementTimeout }}{{ $_ := set $pg "statementTimeout" . }}{{ end -}}
{{- if .tls.enabled -}}
{{- $tls := dict "enabled" true -}}
{{- if .tls.existingSecret -}}
{{- $_ := set $tls "caFile" "/etc/fencegate/postgres-tls/ca.crt" -}}
{{- if .tls.clientCertificate -}}
{{- $_ := set $tls "certFile" "/etc/fencegate/postgres-tls/tls.crt" -}}
{{- $_ := set $tls "keyFile" "/etc/fencegate/postgres-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- with .tls.serverName }}{{ $_ := set $tls "serverName" . }}{{ end -}}
{{- $_ := set $pg "tls" $tls -}}
{{- end -}}
{{- toYaml $pg -}}
{{- end -}}

{{/* Pod annotations that roll the workload when proxy.yaml changes. */}}
{{- define "fencegate.sidecar.podAnnotations" -}}
checksum/fencegate-config: {{ include "fencegate.sidecar.config" . | sha256sum }}
{{- end -}}

{{/*
The sidecar container: one list item for the workload's initContainers
(native sidecar, sidecar.native true) or containers.
*/}}
{{- define "fencegate.sidecar.container" -}}
{{- include "fencegate.sidecar.validate" . -}}
{{- $s := .Values.sidecar -}}
- name: fencegate
  image: {{ include "fencegate.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if $s.native }}
  restartPolicy: Always
  {{- end }}
  args:
    - proxy
    - --config
    - /etc/fencegate/config/proxy.yaml
    {{- range $s.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  {{- with $s.extraEnv }}
  env:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: fencegate
      containerPort: {{ $s.port }}
      protocol: TCP
    - name: fg-health
      containerPort: {{ $s.healthPort }}
      protocol: TCP
  startupProbe:
    httpGet:
      path: /healthz
      port: fg-health
    {{- toYaml $s.startupProbe | nindent 4 }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: fg-health
    {{- toYaml $s.livenessProbe | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: fg-health
    {{- toYaml $s.readinessProbe | nindent 4 }}
  resources:
    {{- toYaml $s.resources | nindent 4 }}
  securityContext:
    {{- include "fencegate.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - name: fencegate-config
      mountPath: /etc/fencegate/config
      readOnly: true
    - name: fencegate-data
      mountPath: /var/lib/fencegate
    - name: fencegate-trust
      mountPath: /etc/fencegate/trust
      readOnly: true
    {{- if $s.tls.enabled }}
    - name: fencegate-tls
      mountPath: /etc/fencegate/tls
      readOnly: true
    {{- end }}
    {{- if $s.admin.existingSecret }}
    - name: fencegate-admin
      mountPath: /etc/fencegate/admin
      readOnly: true
    {{- end }}
    {{- if and (eq $s.store.backend "redis") $s.store.redis.existingSecret }}
    - name: fencegate-redis
      mountPath: /etc/fencegate/redis
      readOnly: true
    {{- end }}
    {{- if and (eq $s.store.backend "redis") $s.store.redis.tls.enabled $s.store.redis.tls.existingSecret }}
    - name: fencegate-redis-tls
      mountPath: /etc/fencegate/redis-tls
      readOnly: true
    {{- end }}
    {{- if eq $s.store.backend "postgres" }}
    - name: fencegate-postgres
      mountPath: /etc/fencegate/postgres
      readOnly: true
    {{- if and $s.store.postgres.tls.enabled $s.store.postgres.tls.existingSecret }}
    - name: fencegate-postgres-tls
      mountPath: /etc/fencegate/postgres-tls
      readOnly: true
    {{- end }}
    {{- end }}
    {{- with $s.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The sidecar's volumes: list items for the workload's pod volumes. */}}
{{- define "fencegate.sidecar.volumes" -}}
{{- include "fencegate.sidecar.validate" . -}}
{{- $s := .Values.sidecar -}}
- name: fencegate-config
  configMap:
    name: {{ include "fencegate.sidecar.fullname" . }}
{{- if not $s.persistence.claimTemplate }}
- name: fencegate-data
  {{- if and (eq $s.store.backend "bolt") $s.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "fencegate.sidecar.pvcName" . }}
  {{- else }}
  emptyDir:
    sizeLimit: 64Mi
  {{- end }}
{{- end }}
- name: fencegate-trust
  {{- if $s.trust.existingSecret }}
  secret:
    secretName: {{ $s.trust.existingSecret }}
    defaultMode: 0444
  {{- else }}
  configMap:
    name: {{ $s.trust.existingConfigMap }}
  {{- end }}
{{- if $s.tls.enabled }}
- name: fencegate-tls
  {{- if $s.tls.spiffeCSI }}
  csi:
    driver: spiffe.csi.cert-manager.io
    readOnly: true
  {{- else }}
  secret:
    secretName: {{ $s.tls.existingSecret }}
    defaultMode: 0444
  {{- end }}
{{- end }}
{{- if $s.admin.existingSecret }}
- name: fencegate-admin
  secret:
    secretName: {{ $s.admin.existingSecret }}
    defaultMode: 0444
{{- end }}
{{- if and (eq $s.store.backend "redis") $s.store.redis.existingSecret }}
- name: fencegate-redis
  secret:
    secretName: {{ $s.store.redis.existingSecret }}
    defaultMode: 0444
{{- end }}
{{- if and (eq $s.store.backend "redis") $s.store.redis.tls.enabled $s.store.redis.tls.existingSecret }}
- name: fencegate-redis-tls
  secret:
    secretName: {{ $s.store.redis.tls.existingSecret }}
    defaultMode: 0444
{{- end }}
{{- if eq $s.store.backend "postgres" }}
- name: fencegate-postgres
  secret:
    secretName: {{ $s.store.postgres.existingSecret }}
    defaultMode: 0444
{{- if and $s.store.postgres.tls.enabled $s.store.postgres.tls.existingSecret }}
- name: fencegate-postgres-tls
  secret:
    secretName: {{ $s.store.postgres.tls.existingSecret }}
    defaultMode: 0444
{{- end }}
{{- end }}
{{- with $s.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
A volume claim template for a StatefulSet workload
(sidecar.persistence.claimTemplate): one list item for its
volumeClaimTemplates, the sidecar's data directory of each pod.
*/}}
{{- define "fencegate.sidecar.volumeClaimTemplate" -}}
{{- include "fencegate.sidecar.validate" . -}}
{{- $p := .Values.sidecar.persistence -}}
{{- if not $p.claimTemplate -}}
{{- fail "fencegate.sidecar.volumeClaimTemplate needs sidecar.persistence.claimTemplate: true (else fencegate.sidecar.volumes brings its own data volume)" -}}
{{- end -}}
- metadata:
    name: fencegate-data
  spec:
    accessModes:
      {{- toYaml $p.accessModes | nindent 6 }}
    {{- with $p.storageClass }}
    storageClassName: {{ . }}
    {{- end }}
    resources:
      requests:
        storage: {{ $p.size }}
{{- end -}}
