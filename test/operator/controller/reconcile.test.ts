/**
 * The reconciler against an in-memory API server: what it writes, what it leaves, and the status
 * it reports when the API server refuses an object, a spec cannot be built, dependencies are not
 * ready yet, or monitoring is switched off.
 */
import { describe, expect, it } from '@jest/globals';
import type { Condition, SuiteStatus } from '../../../operator/src/api/v1alpha1/index.js';
import { KubeApiError } from '../../../operator/src/k8s/client.js';
import { EventRecorder } from '../../../operator/src/k8s/events.js';
import { ApplyFailedError, Reconciler } from '../../../operator/src/controller/reconcile.js';
import { DEFAULT_OPERATOR_CONFIG } from '../../../operator/src/resources/index.js';
import { FakeKube, type StoredObject } from './fake-kube.js';

const NS = 'clinical';
const UID = 'uid-1';

function putSuite(kube: FakeKube, spec: Record<string, unknown>, generation = 1): void {
  const existing = kube.get('clinicalsuite.ai/v1alpha1', 'ClinicalSuite', NS, 's');
  kube.put({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name: 's', namespace: NS, uid: UID, generation },
    spec,
    ...(existing?.status === undefined ? {} : { status: existing.status }),
  });
}

function reconciler(kube: FakeKube): Reconciler {
  const now = () => new Date('2026-11-21T10:00:00Z');
  return new Reconciler(kube.client, DEFAULT_OPERATOR_CONFIG, now, 10_000, new EventRecorder(kube.client));
}

/** The Deployment's controller reports every replica updated and ready. */
function markReady(kube: FakeKube, name: string): void {
  const d = kube.get('apps/v1', 'Deployment', NS, name)!;
  d.status = { replicas: 1, readyReplicas: 1, updatedReplicas: 1 };
}

function condition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

function deploymentOf(kube: FakeKube, name: string) {
  return kube.get('apps/v1', 'Deployment', NS, name) as
    | (StoredObject & {
        spec: { template: { spec: { containers: { image: string }[] } } };
      })
    | undefined;
}

const immutable = (obj: StoredObject) =>
  new KubeApiError(
    422,
    'Invalid',
    `PATCH /api/v1/namespaces/${NS}/persistentvolumeclaims/${obj.metadata.name}: 422 ...`,
    `PersistentVolumeClaim "${obj.metadata.name}" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims`,
  );

describe('Reconciler: an object the API server refuses', () => {
  it('marks that component ApplyFailed with the server message, applies the others, deletes nothing of it and asks for a retry', async () => {
    const kube = new FakeKube();
    const services = { llm: { enabled: true }, ocr: { enabled: true }, stt: { enabled: true } };
    putSuite(kube, { services });
    expect((await reconciler(kube).reconcile(NS, 's')).error).toBeUndefined();
    expect(kube.names('Deployment')).toEqual(['s-llm', 's-ocr', 's-stt']);

    // The model volume's storage class changes (immutable), and the suite's image tag with it.
    putSuite(
      kube,
      {
        image: { tag: '0.2.0' },
        services: { ...services, llm: { enabled: true, model: { storageClass: 'fast' } } },
      },
      2,
    );
    kube.refuse = (obj) =>
      obj.kind === 'PersistentVolumeClaim' && obj.metadata.name === 's-llm-models'
        ? immutable(obj)
        : undefined;
    kube.clearWrites();
    const result = await reconciler(kube).reconcile(NS, 's');

    expect(result.error).toBeInstanceOf(ApplyFailedError);
    expect(result.requeueAfterMs).toBeUndefined();
    // The others got the new image; llm stopped at its claim and kept its objects.
    expect(deploymentOf(kube, 's-ocr')!.spec.template.spec.containers[0]!.image).toMatch(/:0\.2\.0$/);
    expect(deploymentOf(kube, 's-stt')!.spec.template.spec.containers[0]!.image).toMatch(/:0\.2\.0$/);
    expect(deploymentOf(kube, 's-llm')!.spec.template.spec.containers[0]!.image).not.toMatch(/0\.2\.0/);
    expect(kube.writes.filter((w) => w.startsWith('delete'))).toEqual([]);
    expect(kube.names('PersistentVolumeClaim')).toEqual(['s-llm-models', 's-stt-models']);

    const status = kube.get('clinicalsuite.ai/v1alpha1', 'ClinicalSuite', NS, 's')!.status as SuiteStatus;
    const degraded = condition(status.services?.llm?.conditions, 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'ApplyFailed' });
    expect(degraded?.message).toBe(
      'PersistentVolumeClaim s-llm-models was not applied: 422 Invalid: PersistentVolumeClaim "s-llm-models" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
    );
    expect(condition(status.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(condition(status.conditions, 'Degraded')?.message).toContain(
      'llm: PersistentVolumeClaim s-llm-models',
    );
    expect(kube.writes).toContain('event ApplyFailed');

    // The same refusal again: the same status (not rewritten), no second event, still an error.
    kube.clearWrites();
    const again = await reconciler(kube).reconcile(NS, 's');
    expect(again.error).toBeInstanceOf(ApplyFailedError);
    expect(kube.writes).toEqual([]);
  });

  it('does not apply the rest of a component after a refused object (a Deployment without its claim)', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { llm: { enabled: true }, ocr: { enabled: true } } });
    kube.refuse = (obj) =>
      obj.kind === 'PersistentVolumeClaim'
        ? new KubeApiError(403, 'Forbidden', 'POST ...: 403', 'exceeded quota: storage, requested: 20Gi')
        : undefined;
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(result.error?.failures).toEqual([
      'llm: PersistentVolumeClaim s-llm-models was not applied: 403 Forbidden: exceeded quota: storage, requested: 20Gi',
    ]);
    expect(kube.names('Deployment')).toEqual(['s-ocr']);
    expect(kube.names('ConfigMap')).toEqual(['s-llm', 's-ocr']);

    // Quota freed: the next try applies it and the error is gone.
    kube.refuse = () => undefined;
    const retried = await reconciler(kube).reconcile(NS, 's');
    expect(retried.error).toBeUndefined();
    expect(kube.names('Deployment')).toEqual(['s-llm', 's-ocr']);
  });
});

describe('Reconciler: a component skipped for an invalid spec', () => {
  it('keeps its running objects and reports InvalidSpec', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { llm: { enabled: true, resourceProfile: 'nvidia-gpu-l4:1' } } });
    await reconciler(kube).reconcile(NS, 's');
    const before = [...kube.objects.keys()].sort();

    putSuite(kube, { services: { llm: { enabled: true, resourceProfile: 'nvidia-gpu-l4x:1' } } }, 2);
    kube.clearWrites();
    await reconciler(kube).reconcile(NS, 's');
    expect(kube.writes.filter((w) => w.startsWith('delete'))).toEqual([]);
    expect([...kube.objects.keys()].sort()).toEqual(before);
    const status = kube.get('clinicalsuite.ai/v1alpha1', 'ClinicalSuite', NS, 's')!.status as SuiteStatus;
    expect(condition(status.services?.llm?.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      message: expect.stringContaining('unknown resource profile "nvidia-gpu-l4x"') as unknown as string,
    });
  });
});

describe('Reconciler: ServiceMonitors', () => {
  const monitored = (serviceMonitor: boolean, ocr = true) => ({
    monitoring: { serviceMonitor },
    services: { ocr: { enabled: ocr }, stt: { enabled: true } },
  });

  it('deletes them when monitoring or their service is switched off', async () => {
    const kube = new FakeKube();
    kube.put({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'servicemonitors.monitoring.coreos.com' },
    });
    putSuite(kube, monitored(true));
    await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('ServiceMonitor')).toEqual(['s-ocr', 's-stt']);

    putSuite(kube, monitored(true, false), 2);
    await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('ServiceMonitor')).toEqual(['s-stt']);

    putSuite(kube, monitored(false, false), 3);
    await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('ServiceMonitor')).toEqual([]);
    expect(kube.names('Deployment')).toEqual(['s-stt']);
  });

  it.each([
    ['without the monitoring.coreos.com CRD (404 on list)', false],
    ['whose CRD went away after it was looked up (404 on apply)', true],
  ])('reconciles a cluster %s', async (_name, crdSeen) => {
    const kube = new FakeKube();
    if (crdSeen)
      kube.put({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'servicemonitors.monitoring.coreos.com' },
      });
    kube.unserved.add('ServiceMonitor');
    putSuite(kube, monitored(true));
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(result.error).toBeUndefined();
    expect(kube.names('Deployment')).toEqual(['s-ocr', 's-stt']);
    expect(kube.writes.filter((w) => w.startsWith('status'))).toEqual(['status ClinicalSuite s']);
  });
});

describe('Reconciler: dependsOn', () => {
  const spec = (concurrency: number) => ({
    services: { llm: { enabled: true, resourceProfile: 'cpu:1' }, agent: { enabled: true, concurrency } },
  });

  it('creates a dependent only once its dependencies are ready', async () => {
    const kube = new FakeKube();
    putSuite(kube, spec(4));
    const first = await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('Deployment')).toEqual(['s-llm']);
    expect(condition(first.status?.services?.agent?.conditions, 'Ready')).toMatchObject({
      reason: 'WaitingForDependencies',
      message: 'waiting for llm to be ready',
    });
    markReady(kube, 's-llm');
    await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('Deployment')).toEqual(['s-agent', 's-llm']);
  });

  it('keeps an existing dependent up to date while a dependency is not ready, and says it waits', async () => {
    const kube = new FakeKube();
    putSuite(kube, spec(4));
    await reconciler(kube).reconcile(NS, 's');
    markReady(kube, 's-llm');
    await reconciler(kube).reconcile(NS, 's');
    markReady(kube, 's-agent');
    const configOf = () =>
      (kube.get('v1', 'ConfigMap', NS, 's-agent') as StoredObject & { data: Record<string, string> }).data;
    expect(configOf()['MAX_CONCURRENCY']).toBe('4');

    // The llm rolls (not ready) while the agent's concurrency changes.
    kube.get('apps/v1', 'Deployment', NS, 's-llm')!.status = {
      replicas: 1,
      readyReplicas: 0,
      updatedReplicas: 1,
    };
    putSuite(kube, spec(7), 2);
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(configOf()['MAX_CONCURRENCY']).toBe('7');
    expect(condition(result.status?.services?.agent?.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WaitingForDependencies',
      message: 'waiting for llm to be ready (1/1 replicas ready)',
    });
  });
});

describe('Reconciler: what the Deployment controller reports', () => {
  it('surfaces ReplicaFailure as Degraded with its message', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { ocr: { enabled: true } } });
    await reconciler(kube).reconcile(NS, 's');
    kube.get('apps/v1', 'Deployment', NS, 's-ocr')!.status = {
      replicas: 0,
      conditions: [
        {
          type: 'ReplicaFailure',
          status: 'True',
          reason: 'FailedCreate',
          message: 'pods "s-ocr-5d8f" is forbidden: exceeded quota: compute, requested: cpu=1',
        },
      ],
    };
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(condition(result.status?.services?.ocr?.conditions, 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'ReplicaFailure',
      message:
        'cannot create pods: pods "s-ocr-5d8f" is forbidden: exceeded quota: compute, requested: cpu=1',
    });
  });
});

describe('Reconciler: deleted and hand-edited objects', () => {
  const services = { llm: { enabled: true } };

  it('creates an owned Service again after it was deleted', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services });
    const r = reconciler(kube);
    await r.reconcile(NS, 's');
    kube.objects.delete(
      FakeKube.key({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's-llm', namespace: NS } }),
    );
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(kube.writes).toContain('apply Service s-llm');
    expect(kube.get('v1', 'Service', NS, 's-llm')).toBeDefined();
  });

  it('reverts a hand edit (its applied-hash unchanged) once the resync period has passed, and not before', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services });
    let at = Date.parse('2026-11-21T10:00:00Z');
    const r = new Reconciler(
      kube.client,
      DEFAULT_OPERATOR_CONFIG,
      () => new Date(at),
      10_000,
      undefined,
      600_000,
    );
    await r.reconcile(NS, 's');
    const cm = kube.get('v1', 'ConfigMap', NS, 's-llm') as StoredObject & { data: Record<string, string> };
    const wanted = cm.data['MAX_CONCURRENCY'];
    cm.data['MAX_CONCURRENCY'] = '999';
    kube.clearWrites();
    at += 60_000;
    await r.reconcile(NS, 's');
    expect(kube.writes.filter((w) => w.startsWith('apply'))).toEqual([]);
    at += 600_000;
    await r.reconcile(NS, 's');
    expect(kube.writes).toContain('apply ConfigMap s-llm');
    expect((kube.get('v1', 'ConfigMap', NS, 's-llm') as typeof cm).data['MAX_CONCURRENCY']).toBe(wanted);
    // And the period starts again: the next reconcile writes nothing.
    kube.clearWrites();
    at += 1000;
    await r.reconcile(NS, 's');
    expect(kube.writes.filter((w) => w.startsWith('apply'))).toEqual([]);
  });
});

describe('Reconciler: the auth Secret deleted and made again', () => {
  it('rolls the pods, which read their tokens only at start, and only then', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { llm: { enabled: true }, ocr: { enabled: true } } });
    const r = reconciler(kube);
    await r.reconcile(NS, 's');
    const hashes = () =>
      ['s-llm', 's-ocr'].map(
        (name) =>
          (
            kube.get('apps/v1', 'Deployment', NS, name) as StoredObject & {
              spec: { template: { metadata: { annotations: Record<string, string> } } };
            }
          ).spec.template.metadata.annotations['clinicalsuite.ai/config-hash'],
      );
    const before = hashes();
    const tokens = (kube.get('v1', 'Secret', NS, 's-auth') as StoredObject & { data: Record<string, string> })
      .data;
    await r.reconcile(NS, 's');
    expect(hashes()).toEqual(before);

    kube.objects.delete(
      FakeKube.key({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's-auth', namespace: NS } }),
    );
    await r.reconcile(NS, 's');
    const remade = (kube.get('v1', 'Secret', NS, 's-auth') as StoredObject & { data: Record<string, string> })
      .data;
    expect(remade['api-token']).not.toBe(tokens['api-token']);
    const after = hashes();
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
  });
});

describe('Reconciler: a name another suite owns', () => {
  it("reports NameConflict and leaves the other suite's objects as they are (suite a's task agent, suite a-task's agent)", async () => {
    const kube = new FakeKube();
    const put = (name: string, uid: string, services: Record<string, unknown>) =>
      kube.put({
        apiVersion: 'clinicalsuite.ai/v1alpha1',
        kind: 'ClinicalSuite',
        metadata: { name, namespace: NS, uid, generation: 1 },
        spec: { services },
      });
    put('a', 'uid-a', { taskAgent: { enabled: true } });
    put('a-task', 'uid-a-task', { agent: { enabled: true } });
    await reconciler(kube).reconcile(NS, 'a');
    const before = structuredClone(kube.get('v1', 'ConfigMap', NS, 'a-task-agent'));
    expect(before?.metadata.labels?.['app.kubernetes.io/instance']).toBe('a');

    kube.clearWrites();
    const result = await reconciler(kube).reconcile(NS, 'a-task');
    expect(kube.get('v1', 'ConfigMap', NS, 'a-task-agent')).toEqual(before);
    expect(kube.writes.filter((w) => w.startsWith('apply') && w.endsWith(' a-task-agent'))).toEqual([]);
    const degraded = condition(result.status?.services?.['agent']?.conditions, 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'NameConflict' });
    expect(degraded?.message).toContain(
      "ConfigMap a-task-agent was not applied: its name is taken by ClinicalSuite a's ConfigMap",
    );
    expect(result.error).toBeInstanceOf(ApplyFailedError);
  });
});

describe('Reconciler: the auth Secret or a leftover cannot be written', () => {
  const forbidden = (what: string) =>
    new KubeApiError(403, 'Forbidden', `${what}: 403`, `${what} is forbidden: exceeded quota: secrets`);

  it('reports AuthSecretFailed with the server message, still applies the services and asks for a retry', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { llm: { enabled: true } } });
    kube.refuse = (obj) => (obj.kind === 'Secret' ? forbidden(`secrets "${obj.metadata.name}"`) : undefined);
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(result.error).toBeInstanceOf(ApplyFailedError);
    expect(kube.names('Deployment')).toEqual(['s-llm']);
    const degraded = condition(result.status?.conditions, 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'AuthSecretFailed' });
    expect(degraded?.message).toContain('Secret s-auth was not written: 403 Forbidden');
    expect(degraded?.message).toContain('exceeded quota: secrets');
    // Status was written (the suite says so), and once the server accepts it the failure is gone.
    expect(kube.writes).toContain('status ClinicalSuite s');
    kube.refuse = () => undefined;
    const again = await reconciler(kube).reconcile(NS, 's');
    expect(again.error).toBeUndefined();
    expect(kube.get('v1', 'Secret', NS, 's-auth')).toBeDefined();
    expect(condition(again.status?.conditions, 'Degraded')?.reason).not.toBe('AuthSecretFailed');
  });

  it('reports DeleteFailed for a leftover it cannot delete, deletes the others and asks for a retry', async () => {
    const kube = new FakeKube();
    putSuite(kube, { services: { llm: { enabled: true }, stt: { enabled: true } } });
    await reconciler(kube).reconcile(NS, 's');
    putSuite(kube, { services: { llm: { enabled: true } } }, 2);
    kube.refuseDelete = (ref) =>
      ref.kind === 'Service' ? forbidden(`services "${ref.metadata.name}"`) : undefined;
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(result.error).toBeInstanceOf(ApplyFailedError);
    expect(kube.names('Deployment')).toEqual(['s-llm']);
    expect(kube.names('Service')).toEqual(['s-llm', 's-stt']);
    const degraded = condition(result.status?.conditions, 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'DeleteFailed' });
    expect(degraded?.message).toContain('leftover Service s-stt was not deleted: 403 Forbidden');
  });
});
