/**
 * The reconciler and what a suite may make its pods read (issue 28, attack 6): a Secret or claim
 * its owner did not make usable by suites is refused (Degraded ReferenceNotAllowed, naming it and
 * the rule; no Deployment mounts it), and only its labels are read. And credentials given as plain
 * env values end up in the suite's env Secret, never in a ConfigMap or a Deployment.
 */
import { describe, expect, it } from '@jest/globals';
import type { Condition } from '../../../operator/src/api/v1alpha1/index.js';
import { ApplyFailedError, Reconciler } from '../../../operator/src/controller/reconcile.js';
import { EventRecorder } from '../../../operator/src/k8s/events.js';
import {
  DEFAULT_OPERATOR_CONFIG,
  parseOperatorConfig,
  type OperatorConfig,
} from '../../../operator/src/resources/index.js';
import { FakeKube, type StoredObject } from './fake-kube.js';

const NS = 'clinical';
const USABLE = { 'clinicalsuite.ai/usable-by-suites': 'true' };

function putSuite(kube: FakeKube, spec: Record<string, unknown>, generation = 1): void {
  const existing = kube.get('clinicalsuite.ai/v1alpha1', 'ClinicalSuite', NS, 's');
  kube.put({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name: 's', namespace: NS, uid: 'uid-1', generation },
    spec,
    ...(existing?.status === undefined ? {} : { status: existing.status }),
  });
}

function putSecret(kube: FakeKube, name: string, labels: Record<string, string> = {}): void {
  kube.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS, labels },
    data: { url: Buffer.from('postgres://u:pw@db/x').toString('base64') },
  });
}

function reconciler(kube: FakeKube, config: OperatorConfig = DEFAULT_OPERATOR_CONFIG): Reconciler {
  const now = () => new Date('2026-11-21T10:00:00Z');
  return new Reconciler(kube.client, config, now, 10_000, new EventRecorder(kube.client));
}

const condition = (conditions: readonly Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

const dbFromSecret = (secret: string) => ({
  services: {
    ocr: { enabled: true },
    taskAgent: {
      enabled: true,
      env: [{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: secret, key: 'url' } } }],
    },
  },
});

describe('Reconciler: Secrets and claims a suite names', () => {
  it('refuses a Secret nobody made usable by suites: Degraded naming it and the rule, no Deployment reads it', async () => {
    const kube = new FakeKube();
    putSecret(kube, 'hospital-db');
    putSuite(kube, dbFromSecret('hospital-db'));
    const result = await reconciler(kube).reconcile(NS, 's');

    expect(kube.names('Deployment')).toEqual(['s-ocr']);
    expect(result.error).toBeInstanceOf(ApplyFailedError);
    const degraded = condition(result.status?.services?.taskAgent?.conditions, 'Degraded');
    expect(degraded).toMatchObject({
      status: 'True',
      reason: 'ReferenceNotAllowed',
      message:
        "Secret hospital-db (env DATABASE_URL of container task-agent) is not allowed: a suite's pods may " +
        'read only the Secrets the operator makes for the suite, Secrets labelled ' +
        "clinicalsuite.ai/usable-by-suites=true and none listed in the operator's allowedSecretRefs.names",
    });
    expect(condition(result.status?.conditions, 'Ready')).toMatchObject({ status: 'False' });
    expect(kube.events.map((e) => e['reason'])).toContain('ReferenceNotAllowed');
    // Only its labels were looked at: the operator never read the Secret's data.
    expect(kube.reads).not.toContain('Secret hospital-db');
    expect(kube.metadataReads).toContain('Secret hospital-db');
  });

  it('runs it once its owner labels it, and deletes the Deployment when the label is taken off', async () => {
    const kube = new FakeKube();
    putSecret(kube, 'hospital-db', USABLE);
    putSuite(kube, dbFromSecret('hospital-db'));
    expect((await reconciler(kube).reconcile(NS, 's')).error).toBeUndefined();
    expect(kube.names('Deployment')).toEqual(['s-ocr', 's-task-agent']);

    putSecret(kube, 'hospital-db');
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('Deployment')).toEqual(['s-ocr']);
    expect(condition(result.status?.services?.taskAgent?.conditions, 'Degraded')?.message).toMatch(
      /^Secret hospital-db .* is not allowed: .*; its Deployment s-task-agent was deleted$/,
    );
    // Its other objects stay (a Service, a ConfigMap): only pods could read the Secret.
    expect(kube.names('ConfigMap')).toContain('s-task-agent');
  });

  it('refuses a Secret that does not exist yet, and a Secret the operator made for another suite', async () => {
    const kube = new FakeKube();
    putSuite(kube, dbFromSecret('later'));
    let result = await reconciler(kube).reconcile(NS, 's');
    expect(condition(result.status?.services?.taskAgent?.conditions, 'Degraded')?.message).toMatch(
      /^Secret later \(env DATABASE_URL of container task-agent\) is not allowed \(it does not exist\): /,
    );
    putSecret(kube, 'other-auth', {
      'app.kubernetes.io/managed-by': 'clinicalsuite-operator',
      'app.kubernetes.io/instance': 'other',
    });
    putSuite(
      kube,
      {
        services: { llm: { enabled: true } },
        auth: { apiTokenSecretRef: { name: 'other-auth', key: 'api-token' } },
      },
      2,
    );
    result = await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('Deployment')).toEqual([]);
    expect(condition(result.status?.services?.llm?.conditions, 'Degraded')).toMatchObject({
      reason: 'ReferenceNotAllowed',
      message: expect.stringMatching(
        /^Secret other-auth \(env API_TOKEN of container llm\) is not allowed: /,
      ),
    });
  });

  it('refuses an existingClaim without the label, and a claim it would make whose name is taken by one it did not', async () => {
    const kube = new FakeKube();
    const claim = (name: string, labels: Record<string, string>) =>
      kube.put({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: NS, labels },
      });
    claim('records', { app: 'records' });
    claim('s-llm-models', { app: 'records' });
    putSuite(kube, {
      services: {
        face: { enabled: true, model: { existingClaim: 'records' } },
        llm: { enabled: true },
      },
    });
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(kube.names('Deployment')).toEqual([]);
    expect(condition(result.status?.services?.face?.conditions, 'Degraded')?.message).toMatch(
      /^PersistentVolumeClaim records \(volume models\) is not allowed: .*PersistentVolumeClaims labelled clinicalsuite\.ai\/usable-by-suites=true and none listed in the operator's allowedClaimRefs\.names$/,
    );
    expect(condition(result.status?.services?.llm?.conditions, 'Degraded')?.message).toMatch(
      /^PersistentVolumeClaim s-llm-models \(volume models\) is not allowed: the operator would make it for this suite, but an object of that name exists that it did not make/,
    );
    // The claim it would have taken over is as it was.
    expect(kube.get('v1', 'PersistentVolumeClaim', NS, 's-llm-models')?.metadata.labels).toEqual({
      app: 'records',
    });
  });

  it('allows what the operator config lists by name, and keeps its own auth Secret and claims', async () => {
    const kube = new FakeKube();
    putSecret(kube, 'hospital-db');
    putSuite(kube, { services: { ...dbFromSecret('hospital-db').services, llm: { enabled: true } } });
    const config = parseOperatorConfig({ suiteReferences: { secrets: { names: ['hospital-db'] } } });
    const r = reconciler(kube, config);
    expect((await r.reconcile(NS, 's')).error).toBeUndefined();
    // The task agent calls the llm: it starts once the llm is ready.
    kube.get('apps/v1', 'Deployment', NS, 's-llm')!.status = {
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 1,
    };
    expect((await r.reconcile(NS, 's')).error).toBeUndefined();
    expect(kube.names('Deployment')).toEqual(['s-llm', 's-ocr', 's-task-agent']);
    expect(kube.names('PersistentVolumeClaim')).toEqual(['s-llm-models']);
    expect(kube.names('Secret')).toEqual(['hospital-db', 's-auth']);
  });
});

const PASSWORD = 'pw-that-must-not-leak';
const plainDb = (password = PASSWORD) => ({
  services: {
    taskAgent: {
      enabled: true,
      env: [{ name: 'DATABASE_URL', value: `postgres://tasks:${password}@db.clinical.svc/tasks` }],
    },
    taskProxy: { enabled: true },
  },
});

/** Every stored object but Secrets and the suite itself, as text. */
const readableByView = (kube: FakeKube): string =>
  JSON.stringify(
    [...kube.objects.values()].filter((o: StoredObject) => o.kind !== 'Secret' && o.kind !== 'ClinicalSuite'),
  );

describe('Reconciler: credentials given as plain values', () => {
  it('keeps a plain DATABASE_URL out of every ConfigMap and Deployment: it is in the suite-owned env Secret', async () => {
    const kube = new FakeKube();
    putSuite(kube, plainDb());
    const r = reconciler(kube);
    expect((await r.reconcile(NS, 's')).error).toBeUndefined();
    kube.get('apps/v1', 'Deployment', NS, 's-task-agent')!.status = {
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 1,
    };
    await r.reconcile(NS, 's');

    expect(kube.names('ConfigMap')).toEqual(['s-task-agent', 's-task-proxy']);
    expect(readableByView(kube)).not.toContain(PASSWORD);
    const secret = kube.get('v1', 'Secret', NS, 's-env-secrets') as StoredObject & {
      data: Record<string, string>;
    };
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: 'uid-1', controller: true }),
    ]);
    const values = Object.values(secret.data).map((v) => Buffer.from(v, 'base64').toString());
    expect(values).toContain(`postgres://tasks:${PASSWORD}@db.clinical.svc/tasks`);
    // It still works: both containers read it from that Secret (no embedded store, no claim).
    type Env = { name: string; valueFrom?: { secretKeyRef?: { name: string } } };
    for (const name of ['s-task-agent', 's-task-proxy']) {
      const d = kube.get('apps/v1', 'Deployment', NS, name) as StoredObject & {
        spec: { template: { spec: { containers: { env: Env[] }[] } } };
      };
      expect(
        d.spec.template.spec.containers[0]!.env.find((e) => e.name === 'DATABASE_URL')?.valueFrom
          ?.secretKeyRef?.name,
      ).toBe('s-env-secrets');
    }
    expect(kube.names('PersistentVolumeClaim')).toEqual([]);
    // Said once, when the Secret was written: the value is still in the ClinicalSuite.
    const warnings = kube.events.filter((e) => e['reason'] === 'PlainCredential');
    expect(warnings.map((e) => e['message'])).toEqual([
      'spec.services.taskAgent.env[0] (DATABASE_URL) is a plain value that holds a credential (a database ' +
        'address, which may carry its password): it is kept in Secret s-env-secrets, out of ConfigMaps and pod ' +
        'specs, but stays readable in the ClinicalSuite; put it in a Secret of your own and reference it with ' +
        'valueFrom.secretKeyRef',
    ]);
  });

  it('rolls the pods when the value changes, writes nothing when it does not, and deletes the Secret when none is left', async () => {
    const kube = new FakeKube();
    putSuite(kube, plainDb());
    const r = reconciler(kube);
    await r.reconcile(NS, 's');
    const template = () => JSON.stringify(kube.get('apps/v1', 'Deployment', NS, 's-task-agent')?.['spec']);
    const before = template();
    kube.clearWrites();
    await r.reconcile(NS, 's');
    expect(kube.writes.filter((w) => w.startsWith('apply'))).toEqual([]);

    putSuite(kube, plainDb('a-new-password'), 2);
    await r.reconcile(NS, 's');
    expect(template()).not.toBe(before);
    expect(readableByView(kube)).not.toContain('a-new-password');

    putSuite(kube, { services: { taskAgent: { enabled: true } } }, 3);
    await r.reconcile(NS, 's');
    expect(kube.names('Secret')).toEqual(['s-auth']);
  });

  it('leaves a Secret of that name it did not make as it is, says so, and runs no pod that would read it', async () => {
    const kube = new FakeKube();
    putSecret(kube, 's-env-secrets', { app: 'someone-else' });
    putSuite(kube, plainDb());
    const result = await reconciler(kube).reconcile(NS, 's');
    expect(kube.get('v1', 'Secret', NS, 's-env-secrets')?.metadata.labels).toEqual({ app: 'someone-else' });
    expect(condition(result.status?.conditions, 'Degraded')?.message).toContain(
      'Secret s-env-secrets exists and was not made by this operator for this suite',
    );
    expect(kube.names('Deployment')).toEqual([]);
    expect(readableByView(kube)).not.toContain(PASSWORD);
  });
});
