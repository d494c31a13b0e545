/**
 * The data directory of a component with an embedded store (face's registry, the task agent's
 * database): a ReadWriteOnce PVC mounted at /data and the Recreate strategy while its env sets no
 * DATABASE_URL; an emptyDir for everything else.
 */
import { describe, expect, it } from '@jest/globals';
import {
  buildComponentObjects,
  buildDataPvc,
  buildDeployment,
  dataClaimNames,
  DEFAULT_OPERATOR_CONFIG,
  objectName,
  podConfigHash,
  type DeploymentObject,
  type OwnedSuite,
} from '../../../operator/src/resources/index.js';
import { suiteWith, UID } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;
const DATABASE_URL = { name: 'DATABASE_URL', value: 'postgres://db.clinical.svc/clinical' };

const pod = (d: DeploymentObject) => d.spec.template.spec;
const dataVolume = (d: DeploymentObject) => pod(d).volumes.find((v) => v.name === 'data');
const dataMount = (d: DeploymentObject) => pod(d).containers[0]!.volumeMounts.find((m) => m.name === 'data');

describe.each([
  ['face', 'demo-face-data'],
  ['taskAgent', 'demo-task-agent-data'],
] as const)('%s with its embedded store', (key, claimName) => {
  const suite = suiteWith({ [key]: { enabled: true } });
  const deployment = buildDeployment(suite, key, config);

  it('gets a ReadWriteOnce PVC <suite>-<dir>-data of 1Gi, retained: no ownerReference, the keep annotation', () => {
    const pvc = buildDataPvc(suite, key);
    expect(pvc).toMatchObject({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: claimName,
        namespace: 'clinical',
        labels: { 'app.kubernetes.io/instance': 'demo' },
        annotations: { 'clinicalsuite.ai/resource-policy': 'keep' },
      },
    });
    expect(pvc?.metadata).not.toHaveProperty('ownerReferences');
    expect(pvc?.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
    });
  });

  it('mounts it writable at /data, instead of an emptyDir', () => {
    expect(dataVolume(deployment)).toEqual({ name: 'data', persistentVolumeClaim: { claimName } });
    expect(dataMount(deployment)).toEqual({ name: 'data', mountPath: '/data' });
    expect(
      pod(deployment)
        .volumes.filter((v) => 'emptyDir' in v)
        .map((v) => v.name),
    ).toEqual(['tmp']);
  });

  it('replaces its pod with Recreate: two pods never open the SQLite file at once', () => {
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('lists the PVC before the Deployment that mounts it', () => {
    const kinds = buildComponentObjects(suite, key, config).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds.indexOf(`PersistentVolumeClaim/${claimName}`)).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf(`PersistentVolumeClaim/${claimName}`)).toBeLessThan(
      kinds.indexOf(`Deployment/${deployment.metadata.name}`),
    );
  });

  it('with DATABASE_URL in its env keeps /data an emptyDir, creates no PVC and rolls as before', () => {
    const shared = suiteWith({ [key]: { enabled: true, env: [DATABASE_URL] } });
    const d = buildDeployment(shared, key, config);
    expect(buildDataPvc(shared, key)).toBeNull();
    expect(buildComponentObjects(shared, key, config).map((o) => o.metadata.name)).not.toContain(claimName);
    expect(dataVolume(d)).toEqual({ name: 'data', emptyDir: {} });
    expect(dataMount(d)).toEqual({ name: 'data', mountPath: '/data' });
    expect(d.spec.strategy.type).toBe('RollingUpdate');
  });

  it('with an empty DATABASE_URL (no database) still keeps its data on the PVC', () => {
    const empty = suiteWith({ [key]: { enabled: true, env: [{ name: 'DATABASE_URL', value: '' }] } });
    expect(buildDataPvc(empty, key)?.metadata.name).toBe(claimName);
  });

  it('takes size and storage class from spec.services.<key>.storage', () => {
    const sized = suiteWith({ [key]: { enabled: true, storage: { size: '5Gi', storageClass: 'fast-ssd' } } });
    expect(buildDataPvc(sized, key)?.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast-ssd',
      resources: { requests: { storage: '5Gi' } },
    });
  });

  it('with retainOnDelete: false is owned by the suite (garbage-collected with it)', () => {
    const owned = suiteWith({ [key]: { enabled: true, storage: { retainOnDelete: false } } });
    const pvc = buildDataPvc(owned, key);
    expect(pvc?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ClinicalSuite', name: 'demo', uid: UID, controller: true }),
    ]);
    expect(pvc?.metadata).not.toHaveProperty('annotations');
  });

  it('with an existingClaim mounts that claim, creates none, and still uses Recreate', () => {
    const existing = suiteWith({ [key]: { enabled: true, storage: { existingClaim: 'clinic-data' } } });
    const d = buildDeployment(existing, key, config);
    expect(buildDataPvc(existing, key)).toBeNull();
    expect(dataVolume(d)).toEqual({ name: 'data', persistentVolumeClaim: { claimName: 'clinic-data' } });
    expect(d.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('does not roll pods through the config hash when only the volume size changes', () => {
    const resized = suiteWith({ [key]: { enabled: true, storage: { size: '9Gi' } } });
    expect(podConfigHash(resized, key)).toBe(podConfigHash(suite, key));
  });
});

describe('components without an embedded store', () => {
  it.each(['llm', 'taskProxy', 'stt'] as const)('%s keeps /data an emptyDir and gets no data PVC', (key) => {
    const suite = suiteWith({ taskAgent: { enabled: true }, [key]: { enabled: true } });
    const d = buildDeployment(suite, key, config);
    expect(buildDataPvc(suite, key)).toBeNull();
    expect(dataVolume(d)).toEqual({ name: 'data', emptyDir: {} });
    expect(d.spec.strategy.type).toBe('RollingUpdate');
  });
});

describe('data claim names', () => {
  it('come from the name helper, bounded to 63 characters', () => {
    const long: OwnedSuite = suiteWith({ taskAgent: { enabled: true } }, {}, 'a'.repeat(50));
    const name = buildDataPvc(long, 'taskAgent')?.metadata.name ?? '';
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toBe(objectName(long, 'taskAgent', 'data'));
    expect(name).toMatch(/^a{50}-tas-[0-9a-f]{8}$/);
    expect(dataClaimNames(long).has(name)).toBe(true);
  });

  it('cover every component with an embedded store, enabled or not (the reconciler never deletes them)', () => {
    expect([...dataClaimNames(suiteWith({}))]).toEqual(['demo-face-data', 'demo-task-agent-data']);
  });
});
