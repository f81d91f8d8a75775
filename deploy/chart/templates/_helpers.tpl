{{/* Names, labels and derived settings shared by every template. */}}

{{- define "gangsched.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gangsched.labels" -}}
app.kubernetes.io/name: gangsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gangsched
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "watcher"). */}}
{{- define "gangsched.selectorLabels" -}}
app.kubernetes.io/name: gangsched
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gangsched.componentLabels" -}}
{{ include "gangsched.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gangsched.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Stream-name prefix, as services/contracts/subjects.stream_name: GANGSCHED for gangsched. */}}
{{- define "gangsched.streamPrefix" -}}
{{- regexReplaceAll "[^A-Za-z0-9_-]" .Values.settings.prefix "_" | upper -}}
{{- end -}}

{{- define "gangsched.streamReplicas" -}}
{{- if gt (int .Values.nats.streamReplicas) 0 -}}
{{- .Values.nats.streamReplicas -}}
{{- else if ge (int .Values.nats.replicas) 3 -}}
3
{{- else -}}
1
{{- end -}}
{{- end -}}

{{- define "gangsched.natsName" -}}
{{- printf "%s-nats" (include "gangsched.fullname" .) -}}
{{- end -}}

{{- define "gangsched.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- printf "%s://%s.%s.svc:%d" (ternary "tls" "nats" .Values.nats.tls.enabled) (include "gangsched.natsName" .) .Release.Namespace (int .Values.nats.port) -}}
{{- else -}}
{{- required "nats.url is required when nats.enabled is false" .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{- define "gangsched.decisionKeySecret" -}}
{{- .Values.decisionKey.existingSecret | default (printf "%s-decision-key" (include "gangsched.fullname" .)) -}}
{{- end -}}

{{- define "gangsched.natsUsersSecret" -}}
{{- .Values.nats.auth.existingSecret | default (printf "%s-nats-users" (include "gangsched.fullname" .)) -}}
{{- end -}}

{{- /* The route URLs of the clustered NATS servers, comma-separated, with route password
"password" (dict "root" $ "password" ...). */ -}}
{{- define "gangsched.natsRoutes" -}}
{{- $root := .root -}}
{{- $name := include "gangsched.natsName" $root -}}
{{- $routes := list -}}
{{- range $i := until (int $root.Values.nats.replicas) -}}
{{- $routes = append $routes (printf "nats-route://route:%s@%s-%d.%s-headless:%d" $.password $name $i $name (int $root.Values.nats.clusterPort)) -}}
{{- end -}}
{{- join "," $routes -}}
{{- end -}}

{{- define "gangsched.databaseSecret" -}}
{{- .Values.database.postgresql.existingSecret | default (printf "%s-database" (include "gangsched.fullname" .)) -}}
{{- end -}}

{{/*
NATS subject permissions of each user, as YAML (nats.conf takes them as JSON). P is the
stream-name prefix, p the subject prefix. Every gangsched service may look up and create the
three gangsched streams (each one ensures them at start; a create of an identical stream
succeeds). Every user, the subscriber too, may read its own inbox ($inbox: _INBOX_<user>.>, the
inbox prefix services/bus/connection.py sets for a named user, so `gangsched decisions` as the
subscriber gets its replies) and no other user's; beyond that each may publish only what it
produces (services/contracts/producers.py: the planner trusts an event type only on its
producer's subjects) and consume only what it reads. No service may update, delete or purge
a stream or delete a message: one that could set max_msgs=1 could drop the log (issue 19);
nats.auth.allowStreamUpdates lets the planner update the three streams, to apply changed
stream settings. Durable consumers belong to one service each: the others are denied their
API and ack subjects. No user may create a consumer through the nameless
`$JS.API.CONSUMER.CREATE.<stream>` (the name in the body would let it rewrite any durable):
every consumer is created by name in the subject, ephemeral ones as
`<user>-<purpose>-<random>` (services/bus/reading.py).
*/}}
{{- define "gangsched.natsPermissions" -}}
{{- $p := .Values.settings.prefix -}}
{{- $P := include "gangsched.streamPrefix" . -}}
{{- $streams := list (printf "%s_EVENTS" $P) (printf "%s_DECISIONS" $P) (printf "%s_DEADLETTER" $P) -}}
{{- $ensure := list -}}
{{- range $verb := list "INFO" "CREATE" -}}
{{- range $stream := $streams -}}
{{- $ensure = append $ensure (printf "$JS.API.STREAM.%s.%s" $verb $stream) -}}
{{- end -}}
{{- end -}}
{{- /* what no service may do to any stream (deny wins over allow) */ -}}
{{- $destroy := list "$JS.API.STREAM.DELETE.>" "$JS.API.STREAM.PURGE.>" "$JS.API.STREAM.MSG.DELETE.>" "$JS.API.CONSUMER.CREATE.*" -}}
{{- $events := printf "%s_EVENTS" $P -}}
{{- $decisions := printf "%s_DECISIONS" $P -}}
{{- $lease := printf "KV_%s_LEADER" $P -}}
{{- $inbox := "_INBOX_%s.>" -}}
watcher:
  publish:
    allow:
      # observations and clock ticks (services/watcher/messages.py)
      {{- range $kind := list "node" "pod" "podgroup" "clock" "pvc" "pv" "storageclass" "pdb" "namespace" "csinode" "attachment" }}
      - {{ printf "%s.events.%s.>" $p $kind | quote }}
      {{- end }}
      {{- range $ensure }}
      - {{ . | quote }}
      {{- end }}
      # the short-lived ephemeral consumer (watcher-recovery-*) that reads what the log
      # knows at start, created by name
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.>" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.INFO.%s.*" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.DELETE.%s.*" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.MSG.NEXT.%s.*" $events | quote }}
      # a duplicate ack is checked against the message stored (services/bus/collisions.py)
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $events | quote }}
    deny:
      - "$JS.API.STREAM.UPDATE.>"
      {{- range $destroy }}
      - {{ . | quote }}
      {{- end }}
      # the planner's consumer is the planner's
      - {{ printf "$JS.API.CONSUMER.*.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.*.%s.planner.>" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.*.*.%s.planner" $events | quote }}
  subscribe:
    allow:
      - {{ printf $inbox "watcher" | quote }}
planner:
  publish:
    allow:
      - {{ printf "%s.decisions.>" $p | quote }}
      - {{ printf "%s.deadletter" $p | quote }}
      {{- range $ensure }}
      - {{ . | quote }}
      {{- end }}
      # the durable consumer `planner` on EVENTS
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.planner.>" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.DURABLE.CREATE.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.INFO.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.DELETE.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.MSG.NEXT.%s.planner" $events | quote }}
      - {{ printf "$JS.ACK.%s.planner.>" $events | quote }}
      # EVENTS of another creation time (restored from a backup, or made anew): the message
      # at the tracked sequence is compared with the one applied (services/bus/consuming.py)
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $events | quote }}
      # a duplicate ack is checked against the message stored (services/bus/collisions.py)
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $decisions | quote }}
      - {{ printf "$JS.API.STREAM.MSG.GET.%s_DEADLETTER" $P | quote }}
      # the leader lease (KV bucket <P>_LEADER)
      - {{ printf "$JS.API.STREAM.INFO.%s" $lease | quote }}
      - {{ printf "$JS.API.STREAM.CREATE.%s" $lease | quote }}
      - {{ printf "$JS.API.STREAM.UPDATE.%s" $lease | quote }}
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $lease | quote }}
      - {{ printf "$JS.API.DIRECT.GET.%s.>" $lease | quote }}
      - {{ printf "$KV.%s_LEADER.>" $P | quote }}
      {{- if .Values.nats.auth.allowStreamUpdates }}
      # nats.auth.allowStreamUpdates: repair or change the gangsched streams at start
      {{- range $stream := $streams }}
      - {{ printf "$JS.API.STREAM.UPDATE.%s" $stream | quote }}
      {{- end }}
      {{- end }}
    deny:
      {{- if not .Values.nats.auth.allowStreamUpdates }}
      # only its lease bucket's TTL is the planner's to update
      {{- range $stream := $streams }}
      - {{ printf "$JS.API.STREAM.UPDATE.%s" $stream | quote }}
      {{- end }}
      {{- end }}
      {{- range $destroy }}
      - {{ . | quote }}
      {{- end }}
  subscribe:
    allow:
      - {{ printf $inbox "planner" | quote }}
binder:
  publish:
    allow:
      # outcomes (services/binder/outcomes.py) and its dead letters
      - {{ printf "%s.events.outcome.>" $p | quote }}
      - {{ printf "%s.deadletter" $p | quote }}
      {{- range $ensure }}
      - {{ . | quote }}
      {{- end }}
      # the durable work-queue consumers on DECISIONS: `binder` (placements) and
      # `binder-reports` (rejections and status updates)
      {{- range list "binder" "binder-reports" }}
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.%s.>" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.DURABLE.CREATE.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.INFO.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.DELETE.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.MSG.NEXT.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.ACK.%s.%s.>" $decisions . | quote }}
      {{- end }}
      # its view of pods and nodes (binder-view-*) and its outcome lookups
      # (binder-outcomes-*): ephemeral pull readers on EVENTS, created by name
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.>" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.INFO.%s.*" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.DELETE.%s.*" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.MSG.NEXT.%s.*" $events | quote }}
      - {{ printf "$JS.FC.%s.>" $events | quote }}
      # the last outcome of a group (to settle a redelivered placement) and its last
      # StatusUpdate (to write PodGroup status): direct lookups on EVENTS and DECISIONS
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $events | quote }}
      - {{ printf "$JS.API.DIRECT.GET.%s.>" $events | quote }}
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $decisions | quote }}
      - {{ printf "$JS.API.DIRECT.GET.%s.>" $decisions | quote }}
      # a duplicate ack of its dead letters is checked against the message stored
      - {{ printf "$JS.API.STREAM.MSG.GET.%s_DEADLETTER" $P | quote }}
    deny:
      - "$JS.API.STREAM.UPDATE.>"
      {{- range $destroy }}
      - {{ . | quote }}
      {{- end }}
      # the planner's consumer is the planner's
      - {{ printf "$JS.API.CONSUMER.*.%s.planner" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.*.%s.planner.>" $events | quote }}
      - {{ printf "$JS.API.CONSUMER.*.*.%s.planner" $events | quote }}
  subscribe:
    allow:
      - {{ printf $inbox "binder" | quote }}
subscriber:
  publish:
    allow:
      - "$JS.API.INFO"
      - "$JS.API.STREAM.NAMES"
      - {{ printf "$JS.API.STREAM.INFO.%s" $decisions | quote }}
      - {{ printf "$JS.API.STREAM.MSG.GET.%s" $decisions | quote }}
      - {{ printf "$JS.API.DIRECT.GET.%s.>" $decisions | quote }}
      # consumers created by name (the nameless CREATE.<stream> is denied)
      - {{ printf "$JS.API.CONSUMER.CREATE.%s.>" $decisions | quote }}
      - {{ printf "$JS.API.CONSUMER.DURABLE.CREATE.%s.*" $decisions | quote }}
      - {{ printf "$JS.API.CONSUMER.INFO.%s.*" $decisions | quote }}
      - {{ printf "$JS.API.CONSUMER.DELETE.%s.*" $decisions | quote }}
      - {{ printf "$JS.API.CONSUMER.MSG.NEXT.%s.*" $decisions | quote }}
      - {{ printf "$JS.ACK.%s.>" $decisions | quote }}
      - {{ printf "$JS.FC.%s.>" $decisions | quote }}
    deny:
      # the nameless create: its body may name the binder's consumers
      - "$JS.API.CONSUMER.CREATE.*"
      # the binder's work queues are not the subscriber's to read, ack or delete
      {{- range list "binder" "binder-reports" }}
      - {{ printf "$JS.API.CONSUMER.*.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.*.%s.%s.>" $decisions . | quote }}
      - {{ printf "$JS.API.CONSUMER.*.*.%s.%s" $decisions . | quote }}
      - {{ printf "$JS.ACK.%s.%s.>" $decisions . | quote }}
      {{- end }}
  subscribe:
    allow:
      - {{ printf "%s.decisions.>" $p | quote }}
      # its own inbox (`gangsched decisions`), and nats-py's default one (plain clients);
      # neither covers another user's _INBOX_<user>.>
      - {{ printf $inbox "subscriber" | quote }}
      - "_INBOX.>"
      {{- range .Values.nats.auth.subscriber.extraSubscribe }}
      - {{ . | quote }}
      {{- end }}
{{- end -}}

{{/* Pod scheduling of one component: priorityClassName, nodeSelector, tolerations, affinity and
topology spread (its own topologySpreadConstraints, else the soft spread of `topologySpread`).
Call with (dict "root" $ "component" "watcher" "values" $values). */}}
{{- define "gangsched.podPlacement" -}}
{{- $values := .values -}}
{{- $spread := .root.Values.topologySpread -}}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $values.topologySpreadConstraints | nindent 2 }}
{{- else if $spread.enabled }}
topologySpreadConstraints:
  - maxSkew: {{ $spread.maxSkew }}
    topologyKey: {{ $spread.topologyKey }}
    whenUnsatisfiable: {{ $spread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "gangsched.selectorLabels" . | nindent 8 }}
    {{- if ne .component "nats" }}
    # only the pods of the current ReplicaSet count (not those of a rollout's old one)
    matchLabelKeys: [pod-template-hash]
    {{- end }}
{{- end }}
{{- end -}}

{{/* One gangsched service's Deployment; call with (dict "root" $ "component" "watcher"). */}}
{{- define "gangsched.deployment" -}}
{{- $root := .root -}}
{{- $component := .component -}}
{{- $values := index $root.Values $component -}}
{{- $fullname := include "gangsched.fullname" $root -}}
{{- $sqlite := and (eq $component "planner") (eq $root.Values.database.type "sqlite") -}}
{{- $postgres := and (eq $component "planner") (eq $root.Values.database.type "postgresql") -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "gangsched.componentLabels" . | nindent 4 }}
spec:
  replicas: {{ $values.replicas }}
  revisionHistoryLimit: 3
  {{- if $sqlite }}
  strategy:
    # the SQLite volume is ReadWriteOnce: the old planner must let go of it first
    type: Recreate
  {{- end }}
  selector:
    matchLabels:
      {{- include "gangsched.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "gangsched.componentLabels" . | nindent 8 }}
      annotations:
        checksum/settings: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- if $root.Values.metrics.podAnnotations }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.metrics.port | quote }}
        prometheus.io/path: /metrics
        {{- end }}
        {{- with $values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ $fullname }}-{{ $component }}
      # the planner never calls the Kubernetes API: it gets no token at all
      automountServiceAccountToken: {{ ne $component "planner" }}
      # no <SERVICE>_PORT variables: some would look like GANGSCHED_* settings
      enableServiceLinks: false
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $postgres }}
      initContainers:
        - name: migrate
          image: {{ include "gangsched.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [migrate]
          env:
            - name: GANGSCHED_DB
              valueFrom:
                secretKeyRef:
                  name: {{ include "gangsched.databaseSecret" $root }}
                  key: {{ $root.Values.database.postgresql.existingSecretKey }}
            - name: GANGSCHED_LOG_LEVEL
              value: {{ $root.Values.settings.logLevel | quote }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      {{- end }}
      containers:
        - name: {{ $component }}
          image: {{ include "gangsched.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ $component }}]
          envFrom:
            - configMapRef:
                name: {{ $fullname }}-settings
          env:
            {{- if $root.Values.nats.auth.enabled }}
            - name: GANGSCHED_NATS_USER
              value: {{ $component }}
            - name: GANGSCHED_NATS_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: {{ include "gangsched.natsUsersSecret" $root }}
                  key: {{ $component }}
            {{- end }}
            {{- if $root.Values.nats.tls.enabled }}
            # nats-py verifies the server with Python's default context, which reads this
            - name: SSL_CERT_FILE
              value: /etc/gangsched/nats-ca/ca.crt
            {{- end }}
            {{- if ne $component "watcher" }}
            # the planner signs decisions with it, the binder acts only on those it signed
            - name: GANGSCHED_DECISION_KEY_FILE
              value: /etc/gangsched/decision-key/key
            {{- end }}
            {{- if eq $component "planner" }}
            - name: GANGSCHED_LEADER_ELECTION
              value: {{ $values.leaderElection.enabled | quote }}
            - name: GANGSCHED_LEADER_LEASE_SECONDS
              value: {{ $values.leaderElection.leaseSeconds | quote }}
            - name: GANGSCHED_LEADER_RETRY_SECONDS
              value: {{ $values.leaderElection.retrySeconds | quote }}
            {{- end }}
            {{- if $postgres }}
            - name: GANGSCHED_DB
              valueFrom:
                secretKeyRef:
                  name: {{ include "gangsched.databaseSecret" $root }}
                  key: {{ $root.Values.database.postgresql.existingSecretKey }}
            {{- end }}
            {{- with $values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: http
              containerPort: {{ $root.Values.metrics.port }}
              protocol: TCP
          livenessProbe:
            httpGet: {path: /healthz, port: http}
            {{- toYaml $root.Values.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            {{- toYaml $root.Values.probes.readiness | nindent 12 }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - {name: data, mountPath: /var/lib/gangsched}
            - {name: tmp, mountPath: /tmp}
            {{- if $root.Values.nats.tls.enabled }}
            - {name: nats-ca, mountPath: /etc/gangsched/nats-ca, readOnly: true}
            {{- end }}
            {{- if ne $component "watcher" }}
            - {name: decision-key, mountPath: /etc/gangsched/decision-key, readOnly: true}
            {{- end }}
      volumes:
        {{- if $sqlite }}
        - name: data
          persistentVolumeClaim:
            claimName: {{ $fullname }}-planner-db
        {{- else }}
        - name: data
          emptyDir: {}
        {{- end }}
        - name: tmp
          emptyDir: {}
        {{- if ne $component "watcher" }}
        - name: decision-key
          secret:
            secretName: {{ include "gangsched.decisionKeySecret" $root }}
            defaultMode: 0440
            items:
              - {key: key, path: key}
        {{- end }}
        {{- if $root.Values.nats.tls.enabled }}
        - name: nats-ca
          secret:
            secretName: {{ required "nats.tls.secretName is required with nats.tls.enabled" $root.Values.nats.tls.secretName }}
            items:
              - {key: {{ $root.Values.nats.tls.caKey }}, path: ca.crt}
        {{- end }}
      {{- with include "gangsched.podPlacement" (dict "root" $root "component" $component "values" $values) | trim }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- with $values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
