/**
 * A component's Deployment: one container running `node services/<dir>/dist/main.js` from the
 * suite's image (the `-cuda` variant on a CUDA profile), its env from the ConfigMap and the token
 * Secrets (and the spec's Secret or ConfigMap references), resources and placement from its profile, the model volume filled by an init container,
 * the data volume (a PVC for an embedded store, see data.ts), a users Secret mounted read-only (the
 * task proxy, when spec.auth names one), the restricted security context, probes on /livez and
 * /readyz, and the config-hash annotation.
 */
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import { tokenEnv, usersVolume } from './auth.js';
import { configData } from './config-map.js';
import { podData, type PodData } from './data.js';
import { fetchEnv, mergeEnv, referencedEnv } from './env.js';
import { configHash } from './hash.js';
import { componentLabels, selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { podModel } from './model.js';
import { objectName } from './names.js';
import type { OperatorConfig } from './operator-config.js';
import {
  containerSecurityContext,
  fetchModelContainer,
  podSecurityContext,
  probes,
  volumeMounts,
  volumes,
} from './pod-parts.js';
import { resolvePlacement, type Placement } from './profiles.js';
import { ANNOTATION_CONFIG_HASH, POD_PORT, PORT_NAME, type OwnedSuite } from './types.js';
import type { DeploymentObject, DeploymentStrategy, ResourceRequirements } from './wire.js';

export const TERMINATION_GRACE_PERIOD_SECONDS = 30;

/** `<registry>/<repository>:<tag>`, `-cuda` appended on a CUDA profile unless the tag has it already. */
export function imageFor(suite: OwnedSuite, placement: Placement): string {
  const { registry, repository, tag } = suite.spec.image;
  const cuda = placement.imageVariant === 'cuda' && !tag.endsWith('-cuda');
  return `${registry}/${repository}:${tag}${cuda ? '-cuda' : ''}`;
}

/**
 * The pod template's config hash: what the pods read at start and nothing else (the ConfigMap
 * data and the planned model), so replicas, resources or labels never roll them through it.
 */
export function podConfigHash(suite: OwnedSuite, key: ComponentKey): string {
  const { planned, projector } = podModel(suite, key);
  return configHash({
    data: configData(suite, key),
    model: planned,
    ...(projector ? { projector } : {}),
    ...(suite.authSecretUid === undefined ? {} : { authSecret: suite.authSecretUid }),
  });
}

/**
 * A pod holding an embedded store on its ReadWriteOnce volume is stopped before its replacement
 * starts (Recreate): two pods must never open one SQLite file. Otherwise, on GPUs a rolling update
 * must not need a spare GPU: take one pod down, then start its replacement. Elsewhere keep
 * capacity: start one more, then stop one.
 */
function strategy(placement: Placement, data: PodData): DeploymentStrategy {
  if (data.claimName !== null) return { type: 'Recreate' };
  return placement.gpus > 0
    ? { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } }
    : { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
}

/** A copy without `undefined` members (exact optional types; and nothing to serialize). */
function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

function resources(placement: Placement): ResourceRequirements {
  return {
    ...(Object.keys(placement.limits).length > 0 ? { limits: { ...placement.limits } } : {}),
    ...(Object.keys(placement.requests).length > 0 ? { requests: { ...placement.requests } } : {}),
  };
}

export function buildDeployment(
  suite: OwnedSuite,
  key: ComponentKey,
  config: OperatorConfig,
): DeploymentObject {
  const c = COMPONENTS[key];
  const spec = suite.spec.services[key];
  const name = objectName(suite, key);
  const placement = resolvePlacement(suite, key, config);
  const image = imageFor(suite, placement);
  const { pullPolicy, pullSecrets } = suite.spec.image;
  const model = podModel(suite, key);
  const data = podData(suite, key);
  const env = mergeEnv(tokenEnv(suite, key), referencedEnv(suite, key));
  const users = usersVolume(suite, key);
  const initContainers = fetchModelContainer(model, image, pullPolicy, fetchEnv(suite, key));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: componentMetadata(suite, key, name),
    spec: {
      replicas: spec?.replicas ?? 1,
      selector: { matchLabels: selectorLabels(suite, key) },
      strategy: strategy(placement, data),
      template: {
        metadata: {
          labels: componentLabels(suite, key),
          annotations: {
            [ANNOTATION_CONFIG_HASH]: podConfigHash(suite, key),
            'prometheus.io/path': '/metrics',
            'prometheus.io/port': String(POD_PORT),
            'prometheus.io/scrape': 'true',
          },
        },
        spec: {
          automountServiceAccountToken: false,
          ...(pullSecrets.length > 0 ? { imagePullSecrets: pullSecrets.map((s) => ({ name: s.name })) } : {}),
          securityContext: podSecurityContext(),
          ...(Object.keys(placement.nodeSelector).length > 0
            ? { nodeSelector: { ...placement.nodeSelector } }
            : {}),
          ...(placement.tolerations.length > 0
            ? { tolerations: placement.tolerations.map(definedOnly) }
            : {}),
          ...(placement.runtimeClassName === null ? {} : { runtimeClassName: placement.runtimeClassName }),
          terminationGracePeriodSeconds: TERMINATION_GRACE_PERIOD_SECONDS,
          ...(initContainers.length === 0 ? {} : { initContainers }),
          containers: [
            {
              name: c.dir,
              image,
              imagePullPolicy: pullPolicy,
              command: ['node', `services/${c.dir}/${c.entry}`],
              ports: [{ name: PORT_NAME, containerPort: POD_PORT, protocol: 'TCP' }],
              envFrom: [{ configMapRef: { name } }],
              ...(env.length > 0 ? { env } : {}),
              resources: resources(placement),
              ...probes(),
              securityContext: containerSecurityContext(),
              volumeMounts: [...volumeMounts(model), ...users.volumeMounts],
              // What a crash-looping service printed last is the status's CrashLoop message.
              terminationMessagePolicy: 'FallbackToLogsOnError',
            },
          ],
          volumes: [...volumes(model, data), ...users.volumes],
        },
      },
    },
  };
}
