{{- define "ricochet-relay.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ricochet-relay.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ricochet-relay.labels" -}}
{{ include "ricochet-relay.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Seconds the kubelet waits after starting the preStop: the drain notice, the drain, then a margin. */}}
{{- define "ricochet-relay.gracePeriod" -}}
{{- add (div (add .Values.relay.drainNoticeMs .Values.relay.drainMs 999) 1000) 15 -}}
{{- end -}}
