/**
 * The PVCs the operator creates for a component:
 *
 * - its model PVC, when it has a model and no `existingClaim`. With `retainModels` the PVC has no
 *   ownerReference, so deleting the suite leaves it (and its multi-gigabyte download) for the next
 *   suite of that name; an annotation says so to whoever finds it.
 * - its data PVC `<suite>-<dir>-data`, when it keeps an embedded store (see data.ts) and names no
 *   `storage.existingClaim`: ReadWriteOnce (one pod opens the SQLite file). Clinical data cannot be
 *   fetched again, so it is retained by default (`storage.retainOnDelete`): no ownerReference, the
 *   same annotation; with `retainOnDelete: false` the suite owns it and garbage collection deletes it
 *   with the suite (the reconciler still never deletes it as a leftover).
 */
import { DEFAULT_DATA_VOLUME_SIZE, type ComponentKey } from '../api/v1alpha1/index.js';
import { podData } from './data.js';
import { componentMetadata } from './metadata.js';
import { DEFAULT_MODEL_VOLUME_SIZE, podModel } from './model.js';
import { ANNOTATION_RESOURCE_POLICY, type OwnedSuite } from './types.js';
import type { ObjectMeta, PvcObject } from './wire.js';

export const RESOURCE_POLICY_KEEP = 'keep';

/** Metadata of a claim: owned by the suite, or retained (no ownerReference, the keep annotation). */
function claimMetadata(suite: OwnedSuite, key: ComponentKey, name: string, retain: boolean): ObjectMeta {
  return componentMetadata(suite, key, name, {
    owned: !retain,
    ...(retain ? { annotations: { [ANNOTATION_RESOURCE_POLICY]: RESOURCE_POLICY_KEEP } } : {}),
  });
}

export function buildModelPvc(suite: OwnedSuite, key: ComponentKey): PvcObject | null {
  const model = podModel(suite, key);
  if (!model.ownClaim || model.claimName === null) return null;
  const spec = suite.spec.services[key]?.model;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: claimMetadata(suite, key, model.claimName, suite.spec.retainModels),
    spec: {
      accessModes: [spec?.accessMode ?? 'ReadWriteOnce'],
      ...(spec?.storageClass === undefined ? {} : { storageClassName: spec.storageClass }),
      resources: { requests: { storage: spec?.size ?? DEFAULT_MODEL_VOLUME_SIZE[key] } },
    },
  };
}

export function buildDataPvc(suite: OwnedSuite, key: ComponentKey): PvcObject | null {
  const data = podData(suite, key);
  if (!data.ownClaim || data.claimName === null) return null;
  const spec = suite.spec.services[key]?.storage;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: claimMetadata(suite, key, data.claimName, spec?.retainOnDelete ?? true),
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(spec?.storageClass === undefined ? {} : { storageClassName: spec.storageClass }),
      resources: { requests: { storage: spec?.size ?? DEFAULT_DATA_VOLUME_SIZE } },
    },
  };
}
