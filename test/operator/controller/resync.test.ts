/**
 * The reconciler over several resync periods, on a fake clock: every period's wake-up forces a
 * pass, a forced pass that changes nothing says nothing, a failure already stated is not said
 * again, and a refused object is retried on every pass until it is accepted.
 */
import { describe, expect, it } from '@jest/globals';
import type { Condition } from '../../../operator/src/api/v1alpha1/index.js';
import { ApplyFailedError, Reconciler } from '../../../operator/src/controller/reconcile.js';
import { KubeApiError, type KubeClient, type ObjectRef } from '../../../operator/src/k8s/client.js';
import { EventRecorder } from '../../../operator/src/k8s/events.js';
import { DEFAULT_OPERATOR_CONFIG } from '../../../operator/src/resources/index.js';
import { FakeKube, type StoredObject } from './fake-kube.js';

const NS = 'clinical';
const PERIOD = 600_000;
const T0 = Date.parse('2026-11-21T10:00:00Z');

function putSuite(kube: FakeKube, services: Record<string, unknown>, generation = 1): void {
  const existing = kube.get('clinicalsuite.ai/v1alpha1', 'ClinicalSuite', NS, 's');
  kube.put({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name: 's', namespace: NS, uid: 'uid-1', generation },
    spec: { services },
    ...(existing?.status === undefined ? {} : { status: existing.status }),
  });
}

/** A reconciler on a clock the test moves; every read takes 20 ms of it (a pass takes a while). */
function setup(services: Record<string, unknown>) {
  const kube = new FakeKube();
  putSuite(kube, services);
  const clock = { at: T0 };
  const inner = kube.client as unknown as Record<string, unknown> & {
    read: (ref: ObjectRef) => Promise<unknown>;
  };
  const client = {
    ...inner,
    read: (ref: ObjectRef) => {
      clock.at += 20;
      return inner.read(ref);
    },
  } as unknown as KubeClient;
  const r = new Reconciler(
    client,
    DEFAULT_OPERATOR_CONFIG,
    () => new Date(clock.at),
    10_000,
    new EventRecorder(kube.client),
    PERIOD,
  );
  return { kube, clock, r };
}

function markAllReady(kube: FakeKube): void {
  for (const o of kube.objects.values())
    if (o.kind === 'Deployment') o.status = { replicas: 1, readyReplicas: 1, updatedReplicas: 1 };
}

const applies = (kube: FakeKube) => kube.writes.filter((w) => w.startsWith('apply'));
const events = (kube: FakeKube) => kube.writes.filter((w) => w.startsWith('event'));
const condition = (conditions: readonly Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

describe('Reconciler: the resync period', () => {
  it("forces a pass at every period's wake-up, not every other one", async () => {
    const { kube, clock, r } = setup({ llm: { enabled: true } });
    await r.reconcile(NS, 's');
    markAllReady(kube);
    for (let k = 1; k <= 4; k++) {
      // The watch's timer wakes the suite once a period (its first reconcile came just after start).
      clock.at = T0 + k * PERIOD + 5;
      kube.clearWrites();
      await r.reconcile(NS, 's');
      expect(applies(kube).length).toBeGreaterThan(0);
      // A wake-up between periods (a requeue, an event) forces nothing.
      clock.at += 30_000;
      kube.clearWrites();
      await r.reconcile(NS, 's');
      expect(applies(kube)).toEqual([]);
    }
  });

  it('emits no Applied or Warning event when a forced pass changes nothing, and Applied when it reverts an edit', async () => {
    const { kube, clock, r } = setup({ taskAgent: { enabled: true }, taskProxy: { enabled: true } });
    await r.reconcile(NS, 's');
    markAllReady(kube);
    clock.at += 1000;
    await r.reconcile(NS, 's');
    markAllReady(kube);
    clock.at += 1000;
    await r.reconcile(NS, 's');
    expect(kube.writes).toContain('event NoSharedStore');

    clock.at = T0 + PERIOD + 5;
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(applies(kube).length).toBeGreaterThan(0);
    expect(events(kube)).toEqual([]);

    const cm = kube.get('v1', 'ConfigMap', NS, 's-task-proxy') as StoredObject & {
      data: Record<string, string>;
    };
    cm.data['HAND_EDIT'] = '1';
    clock.at = T0 + 2 * PERIOD + 5;
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(events(kube)).toEqual(['event Applied', 'event NoSharedStore']);
    expect(kube.get('v1', 'ConfigMap', NS, 's-task-proxy')?.['data']).not.toHaveProperty('HAND_EDIT');
  });
});

describe('Reconciler: suite-level failures', () => {
  const forbidden = (what: string) =>
    new KubeApiError(403, 'Forbidden', `${what}: 403`, `${what} is forbidden`);

  it('says each of two failures once, not again on every reconcile', async () => {
    const { kube, clock, r } = setup({ llm: { enabled: true }, stt: { enabled: true } });
    kube.refuse = (obj) => (obj.kind === 'Secret' ? forbidden(`secrets "${obj.metadata.name}"`) : undefined);
    await r.reconcile(NS, 's');
    putSuite(kube, { llm: { enabled: true } }, 2);
    kube.refuseDelete = (ref) =>
      ref.kind === 'Service' ? forbidden(`services "${ref.metadata.name}"`) : undefined;
    clock.at += 1000;
    kube.clearWrites();
    const second = await r.reconcile(NS, 's');
    expect(condition(second.status?.conditions, 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'AuthSecretFailed',
    });
    expect(events(kube)).toContain('event DeleteFailed');
    for (let i = 0; i < 2; i++) {
      clock.at += 1000;
      kube.clearWrites();
      const again = await r.reconcile(NS, 's');
      expect(again.error).toBeInstanceOf(ApplyFailedError);
      expect(events(kube)).toEqual([]);
    }
  });
});

describe('Reconciler: an object the API server refuses only when forced', () => {
  it('applies it again on every pass until it is accepted, so Degraded does not flap', async () => {
    const { kube, clock, r } = setup({ llm: { enabled: true } });
    await r.reconcile(NS, 's');
    markAllReady(kube);
    // A hand edit of an immutable field: the server refuses to take it back.
    const live = () => kube.get('apps/v1', 'Deployment', NS, 's-llm') as StoredObject & { spec: unknown };
    (live().spec as { selector: unknown }).selector = { matchLabels: { edited: 'by-hand' } };
    kube.refuse = (obj) =>
      obj.kind === 'Deployment' &&
      JSON.stringify((obj as { spec?: { selector?: unknown } }).spec?.selector) !==
        JSON.stringify((live().spec as { selector: unknown }).selector)
        ? new KubeApiError(422, 'Invalid', 'PATCH 422', 'spec.selector: Invalid value: field is immutable')
        : undefined;
    clock.at = T0 + PERIOD + 5;
    const forced = await r.reconcile(NS, 's');
    expect(forced.error).toBeInstanceOf(ApplyFailedError);
    expect(condition(forced.status?.services?.llm?.conditions, 'Degraded')?.reason).toBe('ApplyFailed');

    for (let i = 0; i < 2; i++) {
      clock.at += 1000;
      kube.clearWrites();
      const next = await r.reconcile(NS, 's');
      expect(next.error).toBeInstanceOf(ApplyFailedError);
      expect(condition(next.status?.services?.llm?.conditions, 'Degraded')).toMatchObject({
        status: 'True',
        reason: 'ApplyFailed',
      });
      expect(events(kube)).toEqual([]);
    }

    kube.refuse = () => undefined;
    clock.at += 1000;
    const fixed = await r.reconcile(NS, 's');
    expect(fixed.error).toBeUndefined();
    expect(condition(fixed.status?.services?.llm?.conditions, 'Degraded')?.status).toBe('False');
    // Accepted: no longer forced.
    clock.at += 1000;
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(applies(kube)).toEqual([]);
  });

  it("keeps a claim's storage request where it was expanded by hand (a claim cannot shrink)", async () => {
    const { kube, clock, r } = setup({ taskAgent: { enabled: true } });
    await r.reconcile(NS, 's');
    markAllReady(kube);
    const claim = () =>
      kube.get('v1', 'PersistentVolumeClaim', NS, 's-task-agent-data') as StoredObject & {
        spec: { resources: { requests: { storage: string } } };
      };
    expect(claim().spec.resources.requests.storage).toBe('1Gi');
    claim().spec.resources.requests.storage = '500Gi';
    kube.refuse = (obj) =>
      obj.kind === 'PersistentVolumeClaim' &&
      (obj as ReturnType<typeof claim>).spec.resources.requests.storage !== '500Gi'
        ? new KubeApiError(
            422,
            'Invalid',
            'PATCH 422',
            'spec.resources.requests.storage: Forbidden: field can not be less than previous value',
          )
        : undefined;
    clock.at = T0 + PERIOD + 5;
    kube.clearWrites();
    const forced = await r.reconcile(NS, 's');
    expect(forced.error).toBeUndefined();
    expect(kube.writes).toContain('apply PersistentVolumeClaim s-task-agent-data');
    expect(claim().spec.resources.requests.storage).toBe('500Gi');
    expect(condition(forced.status?.services?.taskAgent?.conditions, 'Degraded')?.status).toBe('False');
  });
});

describe('Reconciler: configuration warnings', () => {
  it('warns about an env variable nothing reads when it applies the component, naming the one meant', async () => {
    const env = [
      { name: 'LLM_CONTEXT_SIZE', value: '8192' },
      { name: 'NODE_OPTIONS', value: '--max-old-space-size=4096' },
      { name: 'THREADS', value: '8' },
    ];
    const { kube, clock, r } = setup({ llm: { enabled: true, env } });
    await r.reconcile(NS, 's');
    const warnings = kube.events.filter((e) => e['reason'] === 'UnreadEnv');
    expect(warnings).toEqual([
      expect.objectContaining({
        type: 'Warning',
        message:
          'llm: env LLM_CONTEXT_SIZE is read by nothing in the llm service, so it changes nothing; ' +
          'did you mean CONTEXT_SIZE?',
      }),
    ]);
    // Said when the configuration is applied, not on every pass.
    markAllReady(kube);
    clock.at += 1000;
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(events(kube)).not.toContain('event UnreadEnv');
  });
});
