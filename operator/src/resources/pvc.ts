/**
 * A component's model PVC, when it has a model and no `existingClaim`. With `retainModels` the
 * PVC has no ownerReference, so deleting the suite leaves it (and its multi-gigabyte download) for
 * the next suite of that name; an annotation says so to whoever finds it.
 */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { componentMetadata } from './metadata.js';
import { DEFAULT_MODEL_VOLUME_SIZE, podModel } from './model.js';
import { ANNOTATION_RESOURCE_POLICY, type OwnedSuite } from './types.js';
import type { PvcObject } from './wire.js';

export const RESOURCE_POLICY_KEEP = 'keep';

export function buildModelPvc(suite: OwnedSuite, key: ComponentKey): PvcObject | null {
  const model = podModel(suite, key);
  if (!model.ownClaim || model.claimName === null) return null;
  const spec = suite.spec.services[key]?.model;
  const retain = suite.spec.retainModels;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: componentMetadata(suite, key, model.claimName, {
      owned: !retain,
      ...(retain ? { annotations: { [ANNOTATION_RESOURCE_POLICY]: RESOURCE_POLICY_KEEP } } : {}),
    }),
    spec: {
      accessModes: [spec?.accessMode ?? 'ReadWriteOnce'],
      ...(spec?.storageClass === undefined ? {} : { storageClassName: spec.storageClass }),
      resources: { requests: { storage: spec?.size ?? DEFAULT_MODEL_VOLUME_SIZE[key] } },
    },
  };
}
