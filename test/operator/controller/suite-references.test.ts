/**
 * The reconciler and what a suite's pods read: credentials given as plain env values end up in the
 * suite's env Secret, never in a ConfigMap or a Deployment (issue 28, item 7).
 */
import { describe, expect, it } from '@jest/globals';
import { Reconciler } from '../../../operator/src/controller/reconcile.js';
import { EventRecorder } from '../../../operator/src/k8s/events.js';
import { DEFAULT_OPERATOR_CONFIG, type OperatorConfig } from '../../../operator/src/resources/index.js';
import { FakeKube, type StoredObject } from './fake-kube.js';

const NS = 'clinical';

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

function reconciler(kube: FakeKube, config: OperatorConfig = DEFAULT_OPERATOR_CONFIG): Reconciler {
  const now = () => new Date('2026-11-21T10:00:00Z');
  return new Reconciler(kube.client, config, now, 10_000, new EventRecorder(kube.client));
}

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
});
