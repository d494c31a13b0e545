/**
 * `reconcile(namespace, name)`: read the suite as it is now, decide purely what should exist, write
 * only what differs, and write status only when it changed (docs/architecture.md §3, §5, §6). It never
 * branches on what event woke it. Deleting a suite is garbage collection's job.
 *
 * No-op detection: every applied object carries `clinicalsuite.ai/applied-hash`, the hash of what
 * was applied; an object whose annotation matches the desired hash is not written again, so a
 * reconcile with nothing changed makes no API writes. A missing object is created again, and once
 * per resync period every object is applied whatever its hash, which reverts hand edits of the
 * fields the operator sets.
 */
import { randomBytes } from 'node:crypto';
import {
  API_VERSION,
  COMPONENTS,
  KIND,
  LABEL_COMPONENT,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  effectiveDependsOn,
  parseSuite,
  SuiteValidationError,
  type ComponentKey,
  type SuiteStatus,
} from '../api/v1alpha1/index.js';
import { KubeApiError, type KubeClient, type KubeObjectLike } from '../k8s/client.js';
import type { EventRecorder, InvolvedObject } from '../k8s/events.js';
import {
  ENV_SECRET_DIGEST_KEY,
  ResourceProfileError,
  authSecretData,
  authSecretName,
  buildComponentObjects,
  buildEnvSecret,
  componentsInRolloutOrder,
  configHash,
  configWarnings,
  dataClaimNames,
  envSecretName,
  judgeReference,
  objectName,
  ownedSuite,
  ownerReference,
  ownReferences,
  planEnvSecret,
  plainCredentialWarning,
  podReferences,
  referenceRule,
  selectorLabels,
  serviceUrl,
  stableJson,
  type KubeObject,
  type OperatorConfig,
  type OwnedSuite,
} from '../resources/index.js';
import { NameConflictError, keepLargerClaim, otherSuite, type OwnedMeta } from './live-object.js';
import { observeService } from './observe.js';
import {
  computeStatus,
  invalidSpecStatus,
  judgeService,
  type ObservedService,
  type SuiteFailure,
} from './status.js';

export const ANNOTATION_APPLIED_HASH = 'clinicalsuite.ai/applied-hash';

/** How often every object of a suite is applied again whatever its applied-hash (10 minutes). */
export const DEFAULT_RESYNC_MS = 10 * 60_000;

/**
 * Kinds the operator creates, checked for leftovers of disabled services (and of switched-off
 * parts: a PDB, NetworkPolicies, ServiceMonitors).
 */
const OWNED_KINDS = [
  ['apps/v1', 'Deployment'],
  ['v1', 'Service'],
  ['v1', 'ConfigMap'],
  ['v1', 'PersistentVolumeClaim'],
  ['policy/v1', 'PodDisruptionBudget'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
  ['monitoring.coreos.com/v1', 'ServiceMonitor'],
] as const;

export interface ReconcileResult {
  /** Look again after this long (a rollout in progress). */
  readonly requeueAfterMs?: number;
  /** The suite's status as now computed; absent when the suite is gone or being deleted. */
  readonly status?: SuiteStatus;
  /**
   * Writes the API server refused (status, already written, says which): the reconcile failed and
   * is retried with the key's backoff, like a thrown error, but after the rest was done.
   */
  readonly error?: ApplyFailedError;
}

/**
 * One or more writes were refused by the API server: components' objects, the auth Secret, the
 * deletion of a leftover.
 */
export class ApplyFailedError extends Error {
  override readonly name = 'ApplyFailedError';
  constructor(readonly failures: readonly string[]) {
    super(`objects not applied: ${failures.join('; ')}`);
  }
}

/** The longest API server message kept in a condition (the suite's message joins several). */
const MAX_ERROR_MESSAGE = 1024;

/** What an API error says, for a condition: the status code and reason, then the server's message. */
function describeError(error: unknown): string {
  const text =
    error instanceof KubeApiError
      ? `${error.status} ${error.reason}: ${error.detail}`
      : error instanceof Error
        ? error.message
        : String(error);
  return text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE - 1)}…` : text;
}

interface RawSuite {
  readonly metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    deletionTimestamp?: string;
  };
  readonly status?: SuiteStatus;
  readonly [key: string]: unknown;
}

export class Reconciler {
  constructor(
    private readonly client: KubeClient,
    private readonly config: OperatorConfig,
    private readonly now: () => Date = () => new Date(),
    private readonly requeueMs = 10_000,
    private readonly events?: EventRecorder,
    private readonly resyncMs = DEFAULT_RESYNC_MS,
  ) {}

  /** When each suite (by key) last began a pass applying every object whatever its applied-hash said. */
  private readonly fullyApplied = new Map<string, number>();

  /** Components (suite key, component) whose last apply was refused: applied whatever their hash. */
  private readonly applyFailed = new Set<string>();

  /**
   * When this reconcile applies every object even where its applied-hash matches, the time it
   * began (recorded once it is done), else undefined: once per `resyncMs` (counted from the first
   * reconcile of the suite by this process). The hash says what was applied, not what is there
   * now: a hand edit keeps the annotation, and only an apply (force, the operator's field manager)
   * takes the fields back. Counted from a pass's start and due at 0.9 of the period: the watch's
   * resync timer wakes every suite once a period, and that wake-up must find the pass due (counted
   * from the pass's end, or with a timer a little early, it would be due only every other period).
   */
  private fullApplyDue(suite: OwnedSuite): number | undefined {
    if (this.resyncMs <= 0) return undefined;
    const at = this.now().getTime();
    const key = `${suite.metadata.namespace}/${suite.metadata.name}`;
    const last = this.fullyApplied.get(key);
    if (last === undefined) {
      this.fullyApplied.set(key, at);
      return undefined;
    }
    return at - last >= this.resyncMs * 0.9 ? at : undefined;
  }

  async reconcile(namespace: string, name: string): Promise<ReconcileResult> {
    const raw = await this.client.read<RawSuite>({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace },
    });
    if (raw === undefined || raw.metadata.deletionTimestamp !== undefined) {
      this.fullyApplied.delete(`${namespace}/${name}`);
      for (const key of Object.keys(COMPONENTS)) this.applyFailed.delete(`${namespace}/${name}/${key}`);
      return {};
    }
    let suite: OwnedSuite;
    try {
      suite = ownedSuite(parseSuite(raw));
    } catch (error) {
      // Rules the CRD cannot express (a dependsOn cycle …): say so in status; nothing to retry.
      if (!(error instanceof SuiteValidationError)) throw error;
      const status = invalidSpecStatus(
        error.message,
        raw.status,
        raw.metadata.generation,
        this.now().toISOString(),
      );
      if (stableJson(status) !== stableJson(raw.status ?? null)) {
        await this.client.applyStatus(
          { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace } },
          status,
        );
      }
      return { status };
    }
    const suiteFailures: SuiteFailure[] = [];
    // Before anything is built: every builder reads the suite with its plain credentials moved to
    // the env Secret, so none reaches a ConfigMap or a pod spec. An API error here fails the whole
    // reconcile (retried): building from the suite as written would put them there.
    const env = await this.ensureEnvSecret(suite);
    suite = env.suite;
    if (env.failure !== undefined) suiteFailures.push(env.failure);
    try {
      const authSecretUid = await this.ensureAuthSecret(suite);
      if (authSecretUid !== undefined) suite = { ...suite, authSecretUid };
    } catch (error) {
      // Its services are still applied (a pod that needs a missing key says so: ContainerConfigError).
      suiteFailures.push({
        reason: 'AuthSecretFailed',
        message: `Secret ${authSecretName(suite)} was not written: ${describeError(error)}`,
      });
    }
    const fullSince = this.fullApplyDue(suite);
    const full = fullSince !== undefined;

    const observed: ObservedService[] = [];
    // Labels of the Secrets and claims the pods name, read once per reconcile (many share the auth Secret).
    const labelsRead = new Map<string, Promise<{ labels?: Record<string, string> } | undefined>>();
    const readLabels = (kind: string, objectName: string) => {
      const k = `${kind}/${objectName}`;
      let read = labelsRead.get(k);
      if (read === undefined) {
        read = this.client
          .readMetadata({ apiVersion: 'v1', kind, metadata: { name: objectName, namespace } })
          .then((o) =>
            o === undefined ? undefined : { ...(o.metadata?.labels ? { labels: o.metadata.labels } : {}) },
          );
        labelsRead.set(k, read);
      }
      return read;
    };
    const desired = new Set<string>();
    const kept = new Set<string>();
    const ready = new Set<ComponentKey>();
    const failures: string[] = [];
    for (const key of componentsInRolloutOrder(suite)) {
      const endpoint = serviceUrl(suite, key);
      const dir = COMPONENTS[key].dir;
      const waitingFor = effectiveDependsOn(suite.spec.services, key).filter((dep) => !ready.has(dep));
      const waiting = waitingFor.length > 0 ? { waitingFor } : {};
      if (waitingFor.length > 0 && !(await this.deploymentExists(suite, key))) {
        // Rollout follows dependsOn: nothing of it is created until they are ready (what exists stays).
        kept.add(dir);
        observed.push({ component: key, endpoint, pods: [], waitingFor });
        continue;
      }
      let objects: KubeObject[];
      try {
        objects = buildComponentObjects(suite, key, this.config);
      } catch (error) {
        if (!(error instanceof ResourceProfileError)) throw error;
        // A spec the operator cannot build (a typo in a profile): what runs stays as it is.
        kept.add(dir);
        observed.push({ component: key, endpoint, pods: [], buildError: error.message });
        continue;
      }
      const refusal = await this.checkReferences(suite, key, objects, readLabels);
      if (refusal !== undefined) {
        // Nothing of it is applied and no pod of it may read what it names: its Deployment goes.
        kept.add(dir);
        this.applyFailed.add(`${namespace}/${name}/${key}`);
        failures.push(`${key}: ${refusal.message}`);
        const before = raw.status?.services?.[key]?.conditions?.find((c) => c.type === 'Degraded');
        if (before?.reason !== refusal.reason || before.message !== refusal.message)
          await this.event(suite, 'Warning', refusal.reason, `${key}: ${refusal.message}`);
        observed.push({
          ...(await observeService(this.client, suite, key, endpoint, selectorLabels(suite, key))),
          ...waiting,
          applyError: refusal.message,
          applyReason: refusal.reason,
        });
        continue;
      }
      // A component whose last apply was refused is applied again whatever its hash until one
      // succeeds: otherwise only the forced pass would try (and fail), and the passes between
      // (the hash matches) would clear its Degraded condition and the key's backoff.
      const failedKey = `${namespace}/${name}/${key}`;
      const applied = await this.applyComponent(
        suite,
        key,
        objects,
        desired,
        full || this.applyFailed.has(failedKey),
      );
      if (applied === undefined) this.applyFailed.delete(failedKey);
      else this.applyFailed.add(failedKey);
      const applyError = applied?.message;
      if (applied !== undefined && applyError !== undefined) {
        // Its objects stay as they are (none is a leftover); the other components go on.
        kept.add(dir);
        failures.push(`${key}: ${applyError}`);
        const before = raw.status?.services?.[key]?.conditions?.find((c) => c.type === 'Degraded');
        if (before?.reason !== applied.reason || before.message !== applyError)
          await this.event(suite, 'Warning', applied.reason, `${key}: ${applyError}`);
      }
      const service: ObservedService = {
        ...(await observeService(this.client, suite, key, endpoint, selectorLabels(suite, key))),
        ...waiting,
        ...(applied === undefined ? {} : { applyError: applied.message, applyReason: applied.reason }),
      };
      observed.push(service);
      if (judgeService(service).ready) ready.add(key);
    }
    suiteFailures.push(...(await this.deleteLeftovers(suite, desired, kept)));
    if (fullSince !== undefined) this.fullyApplied.set(`${namespace}/${name}`, fullSince);

    const status = computeStatus(
      observed,
      raw.status,
      raw.metadata.generation,
      this.now().toISOString(),
      suiteFailures,
    );
    if (stableJson(status) !== stableJson(raw.status ?? null)) {
      await this.client.applyStatus(
        { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace } },
        status,
      );
      const before = raw.status?.conditions?.find((c) => c.type === 'Ready');
      const after = status.conditions?.find((c) => c.type === 'Ready');
      if (after !== undefined && (before?.status !== after.status || before.reason !== after.reason)) {
        await this.event(suite, after.status === 'True' ? 'Normal' : 'Warning', after.reason, after.message);
      }
    }
    // A refused write is retried with the key's backoff (the API server's answer may change: quota
    // freed, a claim deleted by hand); the status above already says what failed.
    for (const f of suiteFailures) {
      failures.push(f.message);
      // The suite's Degraded condition carries the first failure's reason but every failure's
      // message: a failure it already states was said before.
      const before = raw.status?.conditions?.find((c) => c.type === 'Degraded');
      if (before?.status !== 'True' || !before.message.includes(f.message))
        await this.event(suite, 'Warning', f.reason, f.message);
    }
    if (failures.length > 0) return { status, error: new ApplyFailedError(failures) };
    return ready.size === observed.length ? { status } : { status, requeueAfterMs: this.requeueMs };
  }

  /**
   * Applies one component's objects in order, stopping at the first the API server refuses (the
   * ones after it may depend on it: a Deployment mounting a claim that could not be made).
   * Returns what failed (reason and message), for its status, or undefined when every object is
   * applied.
   */
  private async applyComponent(
    suite: OwnedSuite,
    key: ComponentKey,
    objects: readonly KubeObject[],
    desired: Set<string>,
    force: boolean,
  ): Promise<{ reason: string; message: string } | undefined> {
    const applied: string[] = [];
    let failure: { reason: string; message: string } | undefined;
    for (const obj of objects) {
      try {
        // A ServiceMonitor only where the Prometheus operator's CRD is installed.
        if (obj.kind === 'ServiceMonitor' && !(await this.hasServiceMonitorCrd())) continue;
        desired.add(`${obj.apiVersion}/${obj.kind}/${obj.metadata.name}`);
        if (await this.ensureApplied(suite, obj as unknown as KubeObjectLike, force))
          applied.push(`${obj.kind} ${obj.metadata.name}`);
      } catch (error) {
        if (obj.kind === 'ServiceMonitor' && error instanceof KubeApiError && error.status === 404) {
          // The CRD went away since it was looked up: no ServiceMonitor, as where it never was.
          this.serviceMonitorCrd = { present: false, checkedAt: this.now().getTime() };
          desired.delete(`${obj.apiVersion}/${obj.kind}/${obj.metadata.name}`);
          continue;
        }
        failure = {
          reason: error instanceof NameConflictError ? 'NameConflict' : 'ApplyFailed',
          message: `${obj.kind} ${obj.metadata.name} was not applied: ${describeError(error)}`,
        };
        break;
      }
    }
    if (applied.length > 0) {
      await this.event(suite, 'Normal', 'Applied', `${key}: applied ${applied.join(', ')}`);
      // Said when the configuration is applied, not on every reconcile.
      for (const warning of configWarnings(suite, key))
        await this.event(suite, 'Warning', warning.reason, warning.message);
    }
    return failure;
  }

  /** Whether the component's Deployment exists (it was created before). */
  private async deploymentExists(suite: OwnedSuite, key: ComponentKey): Promise<boolean> {
    const deployment = await this.client.read({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: objectName(suite, key), namespace: suite.metadata.namespace },
    });
    return deployment !== undefined;
  }

  private async event(
    suite: OwnedSuite,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    if (this.events === undefined) return;
    const on: InvolvedObject = {
      apiVersion: API_VERSION,
      kind: KIND,
      name: suite.metadata.name,
      namespace: suite.metadata.namespace,
      uid: suite.metadata.uid,
    };
    // An event is informative: failing to record one must not fail the reconcile.
    await this.events.record(on, type, reason, message).catch(() => undefined);
  }

  private serviceMonitorCrd: { present: boolean; checkedAt: number } | undefined;

  /**
   * Whether the API server serves ServiceMonitors (the Prometheus operator's CRD is installed),
   * asked of API discovery at most once a minute: no cluster-wide read of CRDs is needed.
   */
  private async hasServiceMonitorCrd(): Promise<boolean> {
    const at = this.now().getTime();
    if (this.serviceMonitorCrd === undefined || at - this.serviceMonitorCrd.checkedAt > 60_000) {
      const present = await this.client.serves('monitoring.coreos.com/v1', 'servicemonitors');
      this.serviceMonitorCrd = { present, checkedAt: at };
    }
    return this.serviceMonitorCrd.present;
  }

  /**
   * Whether the suite may make `key`'s pods read every Secret and claim its objects name
   * (resources/references.ts): undefined when it may, else why not. A refused component is not
   * applied and its Deployment, if one exists, is deleted (a label taken off a Secret since, say).
   * An API error reading a reference is a failure of its own (ReferenceCheckFailed): nothing of the
   * component is applied or deleted, and the reconcile is retried.
   */
  private async checkReferences(
    suite: OwnedSuite,
    key: ComponentKey,
    objects: readonly KubeObject[],
    readLabels: (kind: string, name: string) => Promise<{ labels?: Record<string, string> } | undefined>,
  ): Promise<{ reason: string; message: string } | undefined> {
    const own = ownReferences(suite, key);
    const refused: string[] = [];
    for (const ref of podReferences(objects)) {
      let live: { labels?: Record<string, string> } | undefined;
      try {
        live = await readLabels(ref.kind, ref.name);
      } catch (error) {
        return {
          reason: 'ReferenceCheckFailed',
          message: `${ref.kind} ${ref.name} could not be read to check it may be used: ${describeError(error)}`,
        };
      }
      const verdict = judgeReference(
        ref,
        live,
        referenceRule(this.config, ref.kind),
        own.has(`${ref.kind}/${ref.name}`),
        suite.metadata.name,
      );
      if (!verdict.allowed) refused.push(verdict.message);
    }
    if (refused.length === 0) return undefined;
    let message = refused.join('; ');
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: objectName(suite, key), namespace: suite.metadata.namespace },
    };
    try {
      const current = await this.client.read<{ metadata?: OwnedMeta }>(deployment);
      if (current !== undefined && otherSuite(suite, current.metadata) === undefined) {
        await this.client.delete(deployment);
        message += `; its Deployment ${deployment.metadata.name} was deleted`;
      }
    } catch (error) {
      message += `; its Deployment ${deployment.metadata.name} could not be deleted: ${describeError(error)}`;
    }
    return { reason: 'ReferenceNotAllowed', message };
  }

  /**
   * The env Secret (resources/env-secret.ts): the suite's plain credentials moved into
   * `<suite>-env-secrets`, written when its data changed (each change recorded as PlainCredential
   * warnings), deleted when nothing is left to move. Returns the suite the builders read (its
   * credentials as references to that Secret). A Secret of that name that this operator did not
   * make is left as it is, and said so (the pods that would read it are refused by the reference
   * check).
   */
  private async ensureEnvSecret(suite: OwnedSuite): Promise<{ suite: OwnedSuite; failure?: SuiteFailure }> {
    const ref = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: envSecretName(suite), namespace: suite.metadata.namespace },
    };
    const ours = (meta: { labels?: Record<string, string> } | undefined) =>
      meta?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY && meta.labels[LABEL_INSTANCE] === suite.metadata.name;
    if (planEnvSecret(suite, '').moved.length === 0) {
      const current = await this.client.readMetadata(ref);
      if (current !== undefined && ours(current.metadata)) await this.client.delete(ref);
      return { suite };
    }
    const current = await this.client.read<{
      metadata?: { labels?: Record<string, string> };
      data?: Record<string, string>;
    }>(ref);
    const stored = current?.data?.[ENV_SECRET_DIGEST_KEY];
    const digestKey =
      stored === undefined ? randomBytes(32).toString('base64url') : Buffer.from(stored, 'base64').toString();
    const plan = planEnvSecret(suite, digestKey);
    if (current !== undefined && !ours(current.metadata)) {
      return {
        suite: plan.suite,
        failure: {
          reason: 'EnvSecretConflict',
          message:
            `Secret ${ref.metadata.name} exists and was not made by this operator for this suite: the plain ` +
            'credentials of the spec cannot be kept there (delete or rename it)',
        },
      };
    }
    if (plan.data !== null && stableJson(current?.data ?? null) !== stableJson(plan.data)) {
      await this.client.apply(buildEnvSecret(suite, plan.data) as unknown as KubeObjectLike);
      for (const moved of plan.moved) {
        const warning = plainCredentialWarning(suite, moved);
        await this.event(suite, 'Warning', warning.reason, warning.message);
      }
    }
    return { suite: plan.suite };
  }

  /**
   * Applies `obj` unless the object in the cluster was applied from the same desired state (and
   * `force` is off). A missing object (deleted by hand) is created again. True when the object
   * changed: created, or its resourceVersion moved (a forced apply of an unchanged object changes
   * nothing, and says nothing).
   */
  private async ensureApplied(suite: OwnedSuite, obj: KubeObjectLike, force: boolean): Promise<boolean> {
    const hash = configHash(obj);
    const current = await this.client.read<{
      metadata?: OwnedMeta & { resourceVersion?: string };
      spec?: { resources?: { requests?: { storage?: unknown } } };
    }>(obj);
    const other = otherSuite(suite, current?.metadata);
    if (other !== undefined)
      throw new NameConflictError(
        `its name is taken by ClinicalSuite ${other}'s ${obj.kind} (rename one of the suites)`,
      );
    if (!force && current?.metadata?.annotations?.[ANNOTATION_APPLIED_HASH] === hash) return false;
    const annotations = {
      ...(obj.metadata['annotations'] as Record<string, string> | undefined),
      [ANNOTATION_APPLIED_HASH]: hash,
    };
    const result = await this.client.apply(
      keepLargerClaim({ ...obj, metadata: { ...obj.metadata, annotations } }, current?.spec),
    );
    if (current === undefined) return true;
    const after = (result as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
      ?.resourceVersion;
    return after !== current.metadata?.resourceVersion;
  }

  /**
   * The default auth Secret: generated with random tokens (and the task proxy's first user), its
   * values never rewritten; written again only to add a key it lacks (a suite from before a
   * component that needs a new one). A Secret of that name that this operator did not make is the
   * user's: left as it is. Nothing is read when every credential has an explicit ref. Returns the
   * Secret's uid when the operator made it.
   */
  private async ensureAuthSecret(suite: OwnedSuite): Promise<string | undefined> {
    if (authSecretData(suite, undefined, () => '') === null) return undefined;
    const ref = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: authSecretName(suite), namespace: suite.metadata.namespace },
    };
    const current = await this.client.read<{
      metadata?: { labels?: Record<string, string>; uid?: string };
      data?: Record<string, string>;
    }>(ref);
    if (current !== undefined && current.metadata?.labels?.[LABEL_MANAGED_BY] !== MANAGED_BY)
      return undefined;
    const data = authSecretData(suite, current?.data, () => randomBytes(32).toString('base64url'));
    // Nothing to add: the Secret stays as it is.
    if (data === null) return current?.metadata?.uid;
    // The whole data, existing values included: a server-side apply drops the fields it owned and
    // no longer names.
    const applied = await this.client.apply({
      ...ref,
      metadata: {
        ...ref.metadata,
        labels: { [LABEL_INSTANCE]: suite.metadata.name, [LABEL_MANAGED_BY]: MANAGED_BY },
        ownerReferences: [ownerReference(suite)],
      },
      type: 'Opaque',
      data,
    });
    return (applied as { metadata?: { uid?: string } } | undefined)?.metadata?.uid ?? current?.metadata?.uid;
  }

  /**
   * Deletes objects this suite owns that are no longer desired (a service was disabled), but never
   * a data PVC: disabling a service or setting its DATABASE_URL must not delete clinical data (an
   * owned one goes with the suite, by garbage collection). Nothing of a `kept` component (waiting
   * for its dependencies, its spec invalid, an object refused) is deleted. A kind the cluster
   * does not serve (ServiceMonitor without prometheus-operator's CRD) has nothing to delete.
   * Returns what could not be listed or deleted (the rest is still done), for status and a retry.
   */
  private async deleteLeftovers(
    suite: OwnedSuite,
    desired: ReadonlySet<string>,
    kept: ReadonlySet<string>,
  ): Promise<SuiteFailure[]> {
    const failures: SuiteFailure[] = [];
    const selector = `${LABEL_INSTANCE}=${suite.metadata.name},${LABEL_MANAGED_BY}=${MANAGED_BY}`;
    const dataClaims = dataClaimNames(suite);
    type Owned = KubeObjectLike & {
      metadata: { ownerReferences?: { uid: string }[]; labels?: Record<string, string> };
    };
    for (const [apiVersion, kind] of OWNED_KINDS) {
      let items: Owned[];
      try {
        items = await this.client.list<Owned>(apiVersion, kind, suite.metadata.namespace, selector);
      } catch (error) {
        // The API group is not served (no ServiceMonitor CRD in this cluster): nothing to delete.
        if (error instanceof KubeApiError && error.status === 404) continue;
        failures.push({
          reason: 'DeleteFailed',
          message: `leftover ${kind}s could not be listed: ${describeError(error)}`,
        });
        continue;
      }
      for (const item of items) {
        const owned = item.metadata.ownerReferences?.some((o) => o.uid === suite.metadata.uid) ?? false;
        const component = item.metadata.labels?.[LABEL_COMPONENT] ?? '';
        if (kind === 'PersistentVolumeClaim' && dataClaims.has(item.metadata.name)) continue;
        if (owned && !kept.has(component) && !desired.has(`${apiVersion}/${kind}/${item.metadata.name}`)) {
          try {
            await this.client.delete({
              apiVersion,
              kind,
              metadata: { name: item.metadata.name, namespace: suite.metadata.namespace },
            });
          } catch (error) {
            failures.push({
              reason: 'DeleteFailed',
              message: `leftover ${kind} ${item.metadata.name} was not deleted: ${describeError(error)}`,
            });
          }
        }
      }
    }
    return failures;
  }
}
