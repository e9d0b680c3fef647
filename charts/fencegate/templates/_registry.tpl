{{/*
The registry's registry.yaml: registry.config with the keys the chart owns
filled in from the values, after the checks that keep the registry safe.
*/}}
{{- define "fencegate.registry.validate" -}}
{{- $r := .Values.registry -}}
{{- if and (gt (int $r.replicaCount) 1) (not $r.redis.enabled) (not $r.etcd.enabled) -}}
{{- fail "registry.replicaCount > 1 needs a shared backend, registry.redis.enabled or registry.etcd.enabled: the embedded bbolt store is one file of one process, and two registries on two files would issue the same fence twice" -}}
{{- end -}}
{{- if and $r.redis.enabled $r.etcd.enabled -}}
{{- fail "registry.redis.enabled and registry.etcd.enabled: the registry has one backend, choose one" -}}
{{- end -}}
{{- if $r.etcd.enabled -}}
{{- include "fencegate.registry.validateEtcd" $r.etcd -}}
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
{{- include "fencegate.ownedKeys" (dict "config" $r.config "keys" (list "listen" "dataDir" "backend" "redis" "etcd" "signingKey" "publishKeys" "tls" "admin.tokenFile") "where" "registry.config") -}}
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
{{- else if $r.etcd.enabled -}}
{{- $_ = set $c "backend" "etcd" -}}
{{- $_ = set $c "etcd" (include "fencegate.registry.etcdConfig" $r.etcd | fromYaml) -}}
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

{{/*
The checks of registry.etcd (its argument) that the schema cannot make:
the endpoints' scheme against tls.enabled, the user and its password
Secret together, a client certificate only from a Secret.
*/}}
{{- define "fencegate.registry.validateEtcd" -}}
{{- if not .endpoints -}}
{{- fail "registry.etcd.endpoints is required when registry.etcd.enabled (the client URLs of the etcd members, http://host:port or https://host:port)" -}}
{{- end -}}
{{- $want := ternary "https://" "http://" .tls.enabled -}}
{{- range .endpoints -}}
{{- if not (hasPrefix $want .) -}}
{{- fail (printf "registry.etcd.endpoints: %q: with registry.etcd.tls.enabled %v every endpoint is %shost:port" . $.tls.enabled $want) -}}
{{- end -}}
{{- end -}}
{{- if and .username (not .existingSecret) -}}
{{- fail "registry.etcd.username needs registry.etcd.existingSecret (the Secret holding its password, mounted as etcd.passwordFile; the chart never writes a password into the ConfigMap)" -}}
{{- end -}}
{{- if and .existingSecret (not .username) -}}
{{- fail "registry.etcd.existingSecret needs registry.etcd.username (etcd authenticates a user with its password)" -}}
{{- end -}}
{{- if and .tls.clientCertificate (not .tls.existingSecret) -}}
{{- fail "registry.etcd.tls.clientCertificate needs tls.existingSecret (the Secret holding tls.crt and tls.key)" -}}
{{- end -}}
{{- end -}}

{{/*
registry.yaml's etcd section from registry.etcd (its argument): the
password and TLS files are those of the Secrets the StatefulSet mounts at
/etc/fencegate/etcd and /etc/fencegate/etcd-tls.
*/}}
{{- define "fencegate.registry.etcdConfig" -}}
{{- $e := dict "endpoints" .endpoints "prefix" .prefix "dialTimeout" .dialTimeout "retryFor" .retryFor "attemptTimeout" .attemptTimeout -}}
{{- if .username -}}
{{- $_ := set $e "username" .username -}}
{{- $_ = set $e "passwordFile" (printf "/etc/fencegate/etcd/%s" .existingSecretKey) -}}
{{- end -}}
{{- if .tls.enabled -}}
{{- $tls := dict "enabled" true -}}
{{- if .tls.existingSecret -}}
{{- $_ := set $tls "caFile" "/etc/fencegate/etcd-tls/ca.crt" -}}
{{- if .tls.clientCertificate -}}
{{- $_ = set $tls "certFile" "/etc/fencegate/etcd-tls/tls.crt" -}}
{{- $_ = set $tls "keyFile" "/etc/fencegate/etcd-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- with .tls.serverName -}}
{{- $_ := set $tls "serverName" . -}}
{{- end -}}
{{- $_ := set $e "tls" $tls -}}
{{- end -}}
{{- toYaml $e -}}
{{- end -}}
