{{/*
The registry's registry.yaml: registry.config with the keys the chart owns
filled in from the values, after the checks that keep the registry safe.
*/}}
{{- define "fencegate.registry.validate" -}}
{{- $r := .Values.registry -}}
{{- if and (gt (int $r.replicaCount) 1) (not $r.redis.enabled) -}}
{{- fail "registry.replicaCount > 1 needs registry.redis.enabled: the embedded bbolt store is one file of one process, and two registries on two files would issue the same fence twice" -}}
{{- end -}}
{{- if and (gt (int $r.replicaCount) 1) (not $r.keys.existingSecret) -}}
{{- fail "registry.replicaCount > 1 needs registry.keys.existingSecret: every replica must sign with the same key (fencegate keys generate --out DIR)" -}}
{{- end -}}
{{- if and $r.redis.enabled (not $r.redis.address) -}}
{{- fail "registry.redis.address is required when registry.redis.enabled (host:port of the Redis primary)" -}}
{{- end -}}
{{- if and (eq ((($r.config).identity).mode | default "mtls") "mtls") (not $r.tls.enabled) -}}
{{- fail "registry.config.identity.mode mtls needs registry.tls.enabled (the client certificate is the caller's identity)" -}}
{{- end -}}
{{- include "fencegate.ownedKeys" (dict "config" $r.config "keys" (list "listen" "dataDir" "backend" "redis" "signingKey" "publishKeys" "tls" "admin.tokenFile") "where" "registry.config") -}}
{{- end -}}

{{- define "fencegate.registry.config" -}}
{{- include "fencegate.registry.validate" . -}}
{{- $r := .Values.registry -}}
{{- $c := deepCopy ($r.config | default dict) -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%d" (int $r.port)) -}}
{{- $_ = set $c "dataDir" "/var/lib/fencegate" -}}
{{- if $r.redis.enabled -}}
{{- $redis := dict "addr" $r.redis.address "db" (int $r.redis.db) "prefix" $r.redis.prefix "minReplicas" (int $r.redis.minReplicas) "replicaTimeout" $r.redis.replicaTimeout -}}
{{- if $r.redis.existingSecret -}}
{{- $_ = set $redis "passwordFile" (printf "/etc/fencegate/redis/%s" $r.redis.existingSecretKey) -}}
{{- end -}}
{{- $_ = set $c "backend" "redis" -}}
{{- $_ = set $c "redis" $redis -}}
{{- else -}}
{{- $_ = set $c "backend" "bolt" -}}
{{- end -}}
{{- if $r.keys.existingSecret -}}
{{- $_ = set $c "signingKey" (printf "/etc/fencegate/keys/%s" $r.keys.signingKey) -}}
{{- $pub := list -}}
{{- range $r.keys.publishKeys -}}
{{- $pub = append $pub (printf "/etc/fencegate/keys/%s" .) -}}
{{- end -}}
{{- if $pub -}}
{{- $_ = set $c "publishKeys" $pub -}}
{{- end -}}
{{- end -}}
{{- if $r.tls.enabled -}}
{{- $tls := dict "certFile" "/etc/fencegate/tls/tls.crt" "keyFile" "/etc/fencegate/tls/tls.key" -}}
{{- if eq ((($r.config).identity).mode | default "mtls") "mtls" -}}
{{- $_ = set $tls "clientCAFile" "/etc/fencegate/tls/ca.crt" -}}
{{- end -}}
{{- $_ = set $c "tls" $tls -}}
{{- end -}}
{{- if $r.admin.existingSecret -}}
{{- $admin := deepCopy (get $c "admin" | default dict) -}}
{{- $_ = set $admin "tokenFile" (printf "/etc/fencegate/admin/%s" $r.admin.key) -}}
{{- $_ = set $c "admin" $admin -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}
