{{/* The configuration spec-guard runs with: the `config` value, else the profile's. */}}
{{- define "spec-guard.configText" -}}
{{- if .Values.config -}}
{{ toYaml .Values.config }}
{{- else -}}
{{ .Files.Get (printf "profiles/%s.yaml" .Values.profile) }}
{{- end -}}
{{- end -}}

{{/* Labels: the kustomize base's, and Helm's own. */}}
{{- define "spec-guard.labels" -}}
app.kubernetes.io/name: spec-guard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels: stable across upgrades, the same as the kustomize base's. */}}
{{- define "spec-guard.selector" -}}
app.kubernetes.io/component: webhook
app.kubernetes.io/name: spec-guard
{{- end -}}

{{- define "spec-guard.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}
