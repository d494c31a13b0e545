/**
 * Status, computed purely from what the reconciler observed: per service and for the suite, the
 * conditions Ready, Progressing and Degraded with CamelCase reasons and a message that names the
 * root cause (no node with the GPU, PVC pending, model fetch failed with its error, image pull
 * error, crash loop). `lastTransitionTime` is kept while a condition's status does not change, so
 * a status that did not change serializes identically and is not written again.
 */
import type { Condition, ServiceStatus, SuiteStatus } from '../api/v1alpha1/index.js';
import type { ComponentKey } from '../api/v1alpha1/index.js';

/** The parts of a Deployment, its pods and its model and data claims that status reads. */
export interface ObservedService {
  readonly component: ComponentKey;
  readonly endpoint: string;
  /** Set when the objects could not even be built (unknown resource profile …). */
  readonly buildError?: string;
  /** Set when the API server refused one of its objects: which object, and the server's answer. */
  readonly applyError?: string;
  /** The reason of that failure: ApplyFailed (the default), NameConflict (another suite owns the name). */
  readonly applyReason?: string;
  /**
   * Dependencies not ready yet (rollout follows dependsOn): a service without a Deployment is not
   * created until they are; one that exists is kept up to date but is not Ready before them.
   */
  readonly waitingFor?: readonly ComponentKey[];
  readonly deployment?: {
    readonly generation?: number;
    readonly replicas: number;
    readonly status?: {
      readonly observedGeneration?: number;
      readonly replicas?: number;
      readonly readyReplicas?: number;
      readonly updatedReplicas?: number;
      readonly conditions?: readonly ObservedDeploymentCondition[];
    };
  };
  readonly pods: readonly ObservedPod[];
  readonly modelClaim?: ObservedClaim;
  /** The PVC of its data directory, for a component that keeps an embedded store. */
  readonly dataClaim?: ObservedClaim;
}

/** A Deployment status condition (Available, Progressing, ReplicaFailure). */
export interface ObservedDeploymentCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface ObservedClaim {
  readonly name: string;
  readonly phase?: string;
}

export interface ObservedPod {
  readonly name: string;
  readonly phase?: string;
  /** PodScheduled=False with reason Unschedulable: the scheduler's message. */
  readonly unschedulable?: string;
  readonly initContainers: readonly ObservedContainer[];
  readonly containers: readonly ObservedContainer[];
}

export interface ObservedContainer {
  readonly name: string;
  readonly waitingReason?: string;
  readonly waitingMessage?: string;
  readonly terminatedExitCode?: number;
  readonly terminatedMessage?: string;
  readonly restartCount?: number;
}

interface Verdict {
  readonly ready: boolean;
  readonly progressing: boolean;
  readonly degraded: boolean;
  readonly reason: string;
  readonly message: string;
}

const IMAGE_ERRORS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);
/** The kubelet cannot create the container from its spec: a missing Secret, ConfigMap or key. */
const CONFIG_ERRORS = new Set(['CreateContainerConfigError']);
/** The runtime could not create or start the container (or one of its hooks failed). */
const START_ERRORS = new Set([
  'CreateContainerError',
  'RunContainerError',
  'PreStartHookError',
  'PostStartHookError',
]);

/**
 * The scheduler's message when a pod waits for a claim with immediate binding that no volume
 * binds: then the claim is the root cause. A claim of a WaitForFirstConsumer storage class is
 * Pending *because* the pod is not scheduled yet, and the scheduler's message says why.
 */
const UNBOUND_IMMEDIATE_CLAIMS = /unbound immediate PersistentVolumeClaims/i;

function bad(reason: string, message: string): Verdict {
  return { ready: false, progressing: false, degraded: true, reason, message };
}

function progressing(reason: string, message: string): Verdict {
  return { ready: false, progressing: true, degraded: false, reason, message };
}

/** Why one service is (not) ready: the first root cause found, most specific first. */
export function judgeService(s: ObservedService): Verdict {
  if (s.buildError !== undefined) return bad('InvalidSpec', s.buildError);
  if (s.applyError !== undefined) return bad(s.applyReason ?? 'ApplyFailed', s.applyError);
  const waitingFor = s.waitingFor ?? [];
  if (waitingFor.length === 0) return judgeWorkload(s);
  const waiting = `waiting for ${waitingFor.join(', ')} to be ready`;
  // Not created before its dependencies are ready.
  if (s.deployment === undefined) return progressing('WaitingForDependencies', waiting);
  // It exists (kept up to date meanwhile): a failure of its own comes first, else it waits.
  const own = judgeWorkload(s);
  if (own.degraded) return { ...own, message: `${own.message}; ${waiting}` };
  return progressing('WaitingForDependencies', `${waiting} (${own.message})`);
}

/** The verdict on a service's claims, pods and Deployment alone. */
function judgeWorkload(s: ObservedService): Verdict {
  const stuck = s.pods.find((pod) => pod.unschedulable !== undefined);
  const unschedulable =
    stuck === undefined
      ? undefined
      : bad('Unschedulable', `pod ${stuck.name} cannot be scheduled: ${stuck.unschedulable ?? ''}`);
  // A claim of a WaitForFirstConsumer class is Pending because its pod is not scheduled: the
  // scheduler says why, unless what it waits for is that claim.
  if (unschedulable !== undefined && !UNBOUND_IMMEDIATE_CLAIMS.test(unschedulable.message))
    return unschedulable;
  if (s.modelClaim?.phase === 'Pending') {
    return progressing(
      'ModelVolumePending',
      `PersistentVolumeClaim ${s.modelClaim.name} is Pending: no volume is bound yet (check its storage class)`,
    );
  }
  if (s.dataClaim?.phase === 'Pending') {
    return progressing(
      'DataVolumePending',
      `data PersistentVolumeClaim ${s.dataClaim.name} is Pending: no volume is bound yet (check its storage class)`,
    );
  }
  if (unschedulable !== undefined) return unschedulable;
  for (const pod of s.pods) {
    for (const c of pod.initContainers) {
      if (c.name.startsWith('fetch-') && c.terminatedExitCode !== undefined && c.terminatedExitCode !== 0) {
        return bad(
          'ModelFetchFailed',
          `model fetch failed: ${c.terminatedMessage ?? `exit code ${c.terminatedExitCode}`}`,
        );
      }
      if (c.name.startsWith('fetch-') && c.waitingReason === 'CrashLoopBackOff') {
        return bad(
          'ModelFetchFailed',
          `model fetch keeps failing: ${c.terminatedMessage ?? c.waitingMessage ?? 'see its logs'}`,
        );
      }
    }
    for (const c of [...pod.initContainers, ...pod.containers]) {
      const waiting = `${c.waitingReason ?? ''} for ${pod.name}/${c.name}: ${c.waitingMessage ?? ''}`.trim();
      if (c.waitingReason !== undefined && IMAGE_ERRORS.has(c.waitingReason)) {
        return bad('ImagePullError', waiting);
      }
      if (c.waitingReason !== undefined && CONFIG_ERRORS.has(c.waitingReason)) {
        return bad('ContainerConfigError', waiting);
      }
      if (c.waitingReason !== undefined && START_ERRORS.has(c.waitingReason)) {
        return bad('ContainerStartFailed', waiting);
      }
      if (c.waitingReason === 'CrashLoopBackOff') {
        const code = c.terminatedExitCode === undefined ? '' : ` (code ${c.terminatedExitCode})`;
        const last = c.terminatedMessage === undefined ? '' : `; last exit${code}: ${c.terminatedMessage}`;
        return bad(
          'CrashLoop',
          `${pod.name}/${c.name} is crash-looping (${c.restartCount ?? 0} restarts)${last}`,
        );
      }
    }
  }
  const d = s.deployment;
  if (d === undefined) return progressing('Creating', 'creating its objects');
  const st = d.status ?? {};
  const current = d.generation === undefined || st.observedGeneration === d.generation;
  const readyReplicas = st.readyReplicas ?? 0;
  const updated = st.updatedReplicas ?? 0;
  if (current && updated >= d.replicas && readyReplicas >= d.replicas && (st.replicas ?? 0) <= d.replicas) {
    return {
      ready: true,
      progressing: false,
      degraded: false,
      reason: 'Ready',
      message: `${readyReplicas}/${d.replicas} replicas ready`,
    };
  }
  // What the Deployment controller itself reports: pods it cannot create (quota, admission) and
  // a rollout past its progress deadline.
  const condition = (type: string) => (current ? st.conditions?.find((c) => c.type === type) : undefined);
  const replicaFailure = condition('ReplicaFailure');
  if (replicaFailure?.status === 'True') {
    return bad(
      'ReplicaFailure',
      `cannot create pods: ${replicaFailure.message ?? replicaFailure.reason ?? ''}`,
    );
  }
  const stalled = condition('Progressing');
  if (stalled?.status === 'False' && stalled.reason === 'ProgressDeadlineExceeded') {
    return bad(
      'ProgressDeadlineExceeded',
      `${stalled.message ?? 'the rollout exceeded its progress deadline'} (${readyReplicas}/${d.replicas} replicas ready)`,
    );
  }
  return progressing('RollingOut', `${readyReplicas}/${d.replicas} replicas ready, ${updated} updated`);
}

/** Sets `type` in `conditions`, keeping lastTransitionTime when the status is unchanged. */
export function setCondition(
  previous: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>,
  now: string,
): Condition {
  const old = previous?.find((c) => c.type === next.type);
  return {
    ...next,
    lastTransitionTime: old !== undefined && old.status === next.status ? old.lastTransitionTime : now,
  };
}

function conditionsOf(
  v: Verdict,
  previous: readonly Condition[] | undefined,
  generation: number | undefined,
  now: string,
): Condition[] {
  const gen = generation === undefined ? {} : { observedGeneration: generation };
  const flag = (b: boolean) => (b ? 'True' : 'False');
  return [
    setCondition(
      previous,
      { type: 'Ready', status: flag(v.ready), reason: v.reason, message: v.message, ...gen },
      now,
    ),
    setCondition(
      previous,
      {
        type: 'Progressing',
        status: flag(v.progressing),
        reason: v.progressing ? v.reason : 'Stable',
        message: v.progressing ? v.message : 'nothing in progress',
        ...gen,
      },
      now,
    ),
    setCondition(
      previous,
      {
        type: 'Degraded',
        status: flag(v.degraded),
        reason: v.degraded ? v.reason : 'AsExpected',
        message: v.degraded ? v.message : 'no failure observed',
        ...gen,
      },
      now,
    ),
  ];
}

/** A failure of the suite's own writes (its auth Secret, deleting a leftover): reason and message. */
export interface SuiteFailure {
  readonly reason: string;
  readonly message: string;
}

/** The suite's status from its services' observations; `previous` keeps transition times. */
export function computeStatus(
  observed: readonly ObservedService[],
  previous: SuiteStatus | undefined,
  generation: number | undefined,
  now: string,
  suiteFailures: readonly SuiteFailure[] = [],
): SuiteStatus {
  const services: Partial<Record<ComponentKey, ServiceStatus>> = {};
  const verdicts: [ComponentKey, Verdict][] = [];
  for (const s of observed) {
    const v = judgeService(s);
    verdicts.push([s.component, v]);
    services[s.component] = {
      ready: v.ready,
      replicas: s.deployment?.status?.replicas ?? 0,
      readyReplicas: s.deployment?.status?.readyReplicas ?? 0,
      endpoint: s.endpoint,
      conditions: conditionsOf(v, previous?.services?.[s.component]?.conditions, generation, now),
    };
  }
  const readyCount = verdicts.filter(([, v]) => v.ready).length;
  const notReady = verdicts.filter(([, v]) => !v.ready);
  const degraded = notReady.filter(([, v]) => v.degraded);
  const describe = (list: [ComponentKey, Verdict][]) => list.map(([k, v]) => `${k}: ${v.message}`).join('; ');
  const first = degraded[0] ?? notReady[0];
  const failed = suiteFailures[0];
  const suiteVerdict: Verdict =
    failed !== undefined
      ? {
          // The suite's own write failed: that comes first, then what its services say.
          ready: false,
          progressing: notReady.some(([, v]) => v.progressing),
          degraded: true,
          reason: failed.reason,
          message: [
            ...suiteFailures.map((f) => f.message),
            ...(notReady.length > 0 ? [describe(degraded.length > 0 ? degraded : notReady)] : []),
          ].join('; '),
        }
      : first === undefined
        ? {
            ready: true,
            progressing: false,
            degraded: false,
            reason: verdicts.length === 0 ? 'NoServicesEnabled' : 'AllServicesReady',
            message:
              verdicts.length === 0
                ? 'no service is enabled'
                : `${readyCount}/${verdicts.length} services ready`,
          }
        : {
            ready: false,
            progressing: notReady.some(([, v]) => v.progressing),
            degraded: degraded.length > 0,
            reason: first[1].reason,
            message: describe(degraded.length > 0 ? degraded : notReady),
          };
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: conditionsOf(suiteVerdict, previous?.conditions, generation, now),
    servicesReady: readyCount,
    servicesTotal: verdicts.length,
    ready: `${readyCount}/${verdicts.length}`,
    // Left out when no service is enabled: applying `services: {}` where this manager owned fields
    // under it leaves null, which the CRD rejects (disabling the last service wedged status).
    ...(verdicts.length === 0 ? {} : { services }),
  };
}

/** The status of a suite whose spec the operator cannot act on (a rule the CRD cannot express). */
export function invalidSpecStatus(
  message: string,
  previous: SuiteStatus | undefined,
  generation: number | undefined,
  now: string,
): SuiteStatus {
  const verdict: Verdict = {
    ready: false,
    progressing: false,
    degraded: true,
    reason: 'InvalidSpec',
    message,
  };
  return {
    ...previous,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: conditionsOf(verdict, previous?.conditions, generation, now),
  };
}
