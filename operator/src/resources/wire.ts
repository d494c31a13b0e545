/**
 * The Kubernetes object shapes the builders return, in wire format (what the API server takes as
 * JSON and `kubectl apply` as YAML): only the fields the builders set. Not client-node's model
 * classes: those rename fields (`from` is `_from`, for their ObjectSerializer) and are classes, not
 * plain data.
 */

export type Labels = Record<string, string>;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels: Labels;
  annotations?: Labels;
  ownerReferences?: OwnerReference[];
}

export interface LabelSelector {
  matchLabels: Labels;
}

export interface ResourceRequirements {
  limits?: Labels;
  requests?: Labels;
}

export interface KeyRef {
  name: string;
  key: string;
  optional?: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: KeyRef } | { configMapKeyRef: KeyRef };
}

export interface Probe {
  httpGet: { path: string; port: string; scheme: 'HTTP' };
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
}

export interface SecurityContext {
  runAsNonRoot: true;
  runAsUser: number;
  allowPrivilegeEscalation: false;
  readOnlyRootFilesystem: true;
  capabilities: { drop: ['ALL'] };
  seccompProfile: { type: 'RuntimeDefault' };
}

export interface PodSecurityContext {
  runAsNonRoot: true;
  runAsUser: number;
  runAsGroup: number;
  fsGroup: number;
  fsGroupChangePolicy: 'OnRootMismatch';
  seccompProfile: { type: 'RuntimeDefault' };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

export type Volume =
  | { name: string; persistentVolumeClaim: { claimName: string } }
  | { name: string; emptyDir: Record<string, never> }
  | {
      name: string;
      secret: { secretName: string; items: { key: string; path: string }[]; defaultMode: number };
    };

export interface Container {
  name: string;
  image: string;
  imagePullPolicy: string;
  command: string[];
  ports?: { name: string; containerPort: number; protocol: 'TCP' }[];
  envFrom?: { configMapRef: { name: string } }[];
  env?: EnvVar[];
  resources: ResourceRequirements;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  securityContext: SecurityContext;
  volumeMounts: VolumeMount[];
  /** FallbackToLogsOnError: a failed container's last log lines become its termination message. */
  terminationMessagePolicy: 'FallbackToLogsOnError';
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface PodSpec {
  automountServiceAccountToken: boolean;
  imagePullSecrets?: { name: string }[];
  securityContext: PodSecurityContext;
  nodeSelector?: Labels;
  tolerations?: Toleration[];
  runtimeClassName?: string;
  terminationGracePeriodSeconds: number;
  initContainers?: Container[];
  containers: Container[];
  volumes: Volume[];
}

export type DeploymentStrategy =
  | { type: 'RollingUpdate'; rollingUpdate: { maxSurge: number; maxUnavailable: number } }
  | { type: 'Recreate' };

interface Typed<A extends string, K extends string> {
  apiVersion: A;
  kind: K;
  metadata: ObjectMeta;
}

export interface ConfigMapObject extends Typed<'v1', 'ConfigMap'> {
  data: Labels;
}

/** A Secret the operator writes itself (reconciler), never one of the builders' KubeObjects. */
export interface SecretObject extends Typed<'v1', 'Secret'> {
  type: 'Opaque';
  data: Labels;
}

export interface DeploymentObject extends Typed<'apps/v1', 'Deployment'> {
  spec: {
    replicas: number;
    selector: LabelSelector;
    strategy: DeploymentStrategy;
    template: { metadata: { labels: Labels; annotations: Labels }; spec: PodSpec };
  };
}

export interface ServiceObject extends Typed<'v1', 'Service'> {
  spec: {
    type: 'ClusterIP';
    selector: Labels;
    ports: { name: string; port: number; targetPort: string; protocol: 'TCP' }[];
    sessionAffinity?: 'ClientIP';
    sessionAffinityConfig?: { clientIP: { timeoutSeconds: number } };
  };
}

export interface PvcObject extends Typed<'v1', 'PersistentVolumeClaim'> {
  spec: {
    accessModes: string[];
    storageClassName?: string;
    resources: { requests: { storage: string } };
  };
}

export interface PdbObject extends Typed<'policy/v1', 'PodDisruptionBudget'> {
  spec: { maxUnavailable: number; selector: LabelSelector };
}

export interface NetworkPolicyPeer {
  podSelector: LabelSelector;
  namespaceSelector?: LabelSelector;
}

export interface NetworkPolicyObject extends Typed<'networking.k8s.io/v1', 'NetworkPolicy'> {
  spec: {
    podSelector: LabelSelector;
    policyTypes: ['Ingress'];
    ingress: { from: NetworkPolicyPeer[]; ports: { protocol: 'TCP'; port: number }[] }[];
  };
}

export interface ServiceMonitorObject extends Typed<'monitoring.coreos.com/v1', 'ServiceMonitor'> {
  spec: {
    selector: LabelSelector;
    endpoints: ServiceMonitorEndpoint[];
  };
}

export interface ServiceMonitorEndpoint {
  port: string;
  path: string;
  scheme: 'http';
  interval: string;
  /** Keep the labels the target exports over the target labels Prometheus sets. */
  honorLabels: boolean;
  relabelings: {
    action: 'replace';
    sourceLabels: string[];
    regex?: string;
    replacement?: string;
    targetLabel: string;
  }[];
}

/** Any object a builder returns. */
export type KubeObject =
  | ConfigMapObject
  | DeploymentObject
  | ServiceObject
  | PvcObject
  | PdbObject
  | NetworkPolicyObject
  | ServiceMonitorObject;
