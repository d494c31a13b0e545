{{- define "clinical-suite.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "clinical-suite.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "clinical-suite.selectorLabels" -}}
app.kubernetes.io/name: {{ include "clinical-suite.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "clinical-suite.labels" -}}
{{ include "clinical-suite.selectorLabels" . }}
app.kubernetes.io/part-of: clinicalsuite
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "clinical-suite.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "clinical-suite.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "clinical-suite.image" -}}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- /*
  The namespaces the operator watches, comma-separated: watchNamespaces, the release's namespace
  when empty, or "*" for every namespace (which cannot be mixed with names).
*/}}
{{- define "clinical-suite.watchNamespaces" -}}
{{- $namespaces := .Values.watchNamespaces | default (list .Release.Namespace) | uniq -}}
{{- if and (has "*" $namespaces) (gt (len $namespaces) 1) -}}
{{- fail "watchNamespaces: \"*\" (every namespace) cannot be combined with namespace names" -}}
{{- end -}}
{{- join "," $namespaces -}}
{{- end -}}

{{- /*
  What the operator may do in a watched namespace. Secrets only by name: get (its own auth and env
  Secrets' data, and the labels of those a suite references), create, patch (server-side apply)
  and delete (an env Secret no longer needed); never list or watch, which would read every Secret
  of the namespace.
*/}}
{{- define "clinical-suite.operatorRules" -}}
- apiGroups: ["clinicalsuite.ai"]
  resources: ["clinicalsuites"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["clinicalsuite.ai"]
  resources: ["clinicalsuites/status"]
  verbs: ["get", "patch", "update"]
# Every generated object's ownerReference has blockOwnerDeletion: true, which the
# OwnerReferencesPermissionEnforcement admission plugin (OpenShift) allows only to whom may
# update the owner's finalizers.
- apiGroups: ["clinicalsuite.ai"]
  resources: ["clinicalsuites/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["services", "configmaps", "persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: ["monitoring.coreos.com"]
  resources: ["servicemonitors"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
{{- end -}}
