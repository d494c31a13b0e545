/** Reads what status needs about one service: its Deployment, its pods, its model and data claims. */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import type { KubeClient } from '../k8s/client.js';
import { objectName, podData, podModel, type OwnedSuite } from '../resources/index.js';
import type { ObservedClaim, ObservedContainer, ObservedPod, ObservedService } from './status.js';

interface WireContainerStatus {
  name: string;
  restartCount?: number;
  state?: {
    waiting?: { reason?: string; message?: string };
    terminated?: { exitCode?: number; message?: string; reason?: string };
  };
  lastState?: { terminated?: { exitCode?: number; message?: string; reason?: string } };
}

interface WirePod {
  metadata: { name: string };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    initContainerStatuses?: WireContainerStatus[];
    containerStatuses?: WireContainerStatus[];
  };
}

interface WireDeployment {
  metadata: { generation?: number };
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export async function observeService(
  client: KubeClient,
  suite: OwnedSuite,
  key: ComponentKey,
  endpoint: string,
  selector: Readonly<Record<string, string>>,
): Promise<ObservedService> {
  const namespace = suite.metadata.namespace;
  const name = objectName(suite, key);
  const deployment = await client.read<WireDeployment>({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
  });
  const labelSelector = Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const pods = await client.list<WirePod>('v1', 'Pod', namespace, labelSelector);
  const modelClaim = await observeClaim(client, namespace, podModel(suite, key).claimName);
  const dataClaim = await observeClaim(client, namespace, podData(suite, key).claimName);
  return {
    component: key,
    endpoint,
    ...(deployment === undefined
      ? {}
      : {
          deployment: {
            ...(deployment.metadata.generation === undefined
              ? {}
              : { generation: deployment.metadata.generation }),
            replicas: deployment.spec?.replicas ?? 1,
            status: observeDeploymentStatus(deployment.status ?? {}),
          },
        }),
    pods: pods.map(observePod),
    ...(modelClaim === undefined ? {} : { modelClaim }),
    ...(dataClaim === undefined ? {} : { dataClaim }),
  };
}

function observeDeploymentStatus(
  status: NonNullable<WireDeployment['status']>,
): NonNullable<NonNullable<ObservedService['deployment']>['status']> {
  const { conditions, ...counts } = status;
  const wanted = (conditions ?? []).filter((c) => c.type === 'Progressing' || c.type === 'ReplicaFailure');
  return {
    ...counts,
    ...(wanted.length === 0
      ? {}
      : {
          conditions: wanted.map((c) => ({
            type: c.type,
            status: c.status,
            ...(c.reason === undefined ? {} : { reason: c.reason }),
            ...(c.message === undefined ? {} : { message: c.message }),
          })),
        }),
  };
}

/** A claim's name and phase, or undefined when there is no claim to read or it does not exist. */
async function observeClaim(
  client: KubeClient,
  namespace: string,
  name: string | null,
): Promise<ObservedClaim | undefined> {
  if (name === null) return undefined;
  const claim = await client.read<{ status?: { phase?: string } }>({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
  });
  if (claim === undefined) return undefined;
  return { name, ...(claim.status?.phase === undefined ? {} : { phase: claim.status.phase }) };
}

function observePod(pod: WirePod): ObservedPod {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  const unschedulable =
    scheduled?.status === 'False' && scheduled.reason === 'Unschedulable'
      ? (scheduled.message ?? 'unschedulable')
      : undefined;
  return {
    name: pod.metadata.name,
    ...(pod.status?.phase === undefined ? {} : { phase: pod.status.phase }),
    ...(unschedulable === undefined ? {} : { unschedulable }),
    initContainers: (pod.status?.initContainerStatuses ?? []).map(observeContainer),
    containers: (pod.status?.containerStatuses ?? []).map(observeContainer),
  };
}

function observeContainer(c: WireContainerStatus): ObservedContainer {
  const terminated = c.state?.terminated ?? c.lastState?.terminated;
  const out: { -readonly [K in keyof ObservedContainer]: ObservedContainer[K] } = { name: c.name };
  if (c.restartCount !== undefined) out.restartCount = c.restartCount;
  if (c.state?.waiting?.reason !== undefined) out.waitingReason = c.state.waiting.reason;
  if (c.state?.waiting?.message !== undefined) out.waitingMessage = c.state.waiting.message;
  if (terminated?.exitCode !== undefined) out.terminatedExitCode = terminated.exitCode;
  const message = terminated?.message ?? terminated?.reason;
  if (message !== undefined) out.terminatedMessage = message.trim();
  return out;
}
