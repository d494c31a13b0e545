/**
 * The parts every service pod shares: the restricted security context (Pod Security Standards
 * "restricted"), the probes, the volumes and the model-fetch init container.
 */
import type { PodData } from './data.js';
import { MODEL_CLI, type PodModel } from './model.js';
import { DATA_DIR, MODELS_DIR, PORT_NAME, RUN_AS_USER, TMP_DIR } from './types.js';
import { mergeEnv } from './env.js';
import type {
  Container,
  EnvVar,
  PodSecurityContext,
  Probe,
  SecurityContext,
  Volume,
  VolumeMount,
} from './wire.js';

export function podSecurityContext(): PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: RUN_AS_USER,
    runAsGroup: RUN_AS_USER,
    // The model volume is written by the init container as this group; OnRootMismatch skips the
    // recursive chown of a multi-gigabyte volume on every start.
    fsGroup: RUN_AS_USER,
    fsGroupChangePolicy: 'OnRootMismatch',
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

export function containerSecurityContext(): SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: RUN_AS_USER,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

const httpGet = (path: string): Pick<Probe, 'httpGet'> => ({
  httpGet: { path, port: PORT_NAME, scheme: 'HTTP' },
});

/**
 * Probes on the kit's unauthenticated endpoints. The startup probe allows 60 × 10 s for the
 * process to come up; loading the model is then the readiness probe's business (/readyz answers
 * 503 until the model is loaded), so a slow load never gets the container killed.
 */
export function probes(): { startupProbe: Probe; readinessProbe: Probe; livenessProbe: Probe } {
  return {
    startupProbe: { ...httpGet('/livez'), periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 60 },
    readinessProbe: { ...httpGet('/readyz'), periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3 },
    livenessProbe: { ...httpGet('/livez'), periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
  };
}

/** The model claim, /data (its claim for an embedded store, else an emptyDir) and /tmp. */
export function volumes(model: PodModel, data: PodData): Volume[] {
  return [
    ...(model.claimName === null
      ? []
      : [{ name: 'models', persistentVolumeClaim: { claimName: model.claimName } }]),
    data.claimName === null
      ? { name: 'data', emptyDir: {} }
      : { name: 'data', persistentVolumeClaim: { claimName: data.claimName } },
    { name: 'tmp', emptyDir: {} },
  ];
}

/** The main container's mounts: the model read-only, /data and /tmp writable (root FS is read-only). */
export function volumeMounts(model: PodModel): VolumeMount[] {
  return [
    ...(model.claimName === null ? [] : [{ name: 'models', mountPath: MODELS_DIR, readOnly: true }]),
    { name: 'data', mountPath: DATA_DIR },
    { name: 'tmp', mountPath: TMP_DIR },
  ];
}

/**
 * `fetch-model` (and `fetch-<id>` for a component's further models): the model store CLI writes
 * the model into the volume (read-write here only) and exits 0 at once when a verified file is
 * already there. HOME points at /tmp for the tools it may run (pip sources), then the spec's
 * `model.fetchEnv` (HF_TOKEN from a Secret for a gated model, a proxy); everything else is the same
 * image and security context as the service.
 */
export function fetchModelContainer(
  model: PodModel,
  image: string,
  pullPolicy: string,
  fetchEnv: readonly EnvVar[] = [],
): Container[] {
  if (model.claimName === null) return [];
  const fetches = [
    ...(model.fetchArgs === null ? [] : [{ name: 'fetch-model', args: model.fetchArgs }]),
    ...model.extraFetches.map((f) => ({ name: `fetch-${f.id}`.slice(0, 63), args: f.args })),
  ];
  return fetches.map(({ name, args }) => ({
    name,
    image,
    imagePullPolicy: pullPolicy,
    command: ['node', MODEL_CLI, ...args],
    // A copy per container: shared objects would render as YAML anchors.
    env: mergeEnv([{ name: 'HOME', value: TMP_DIR }], structuredClone(fetchEnv)),
    resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
    securityContext: containerSecurityContext(),
    volumeMounts: [
      { name: 'models', mountPath: MODELS_DIR },
      { name: 'tmp', mountPath: TMP_DIR },
    ],
    // The fetch's error (its last log lines) is the status's ModelFetchFailed message.
    terminationMessagePolicy: 'FallbackToLogsOnError',
  }));
}
