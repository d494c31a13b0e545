/**
 * The one controller ownerReference every generated object carries (but retained model and data
 * PVCs), so garbage collection deletes what the suite owned when the suite goes.
 */
import { API_VERSION, GROUP, KIND, type Suite } from '../api/v1alpha1/index.js';
import type { OwnedSuite } from './types.js';
import type { OwnerReference } from './wire.js';

export function ownerReference(suite: OwnedSuite): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: suite.metadata.name,
    uid: suite.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The name of the ClinicalSuite an object's controller ownerReference points to, or undefined (no
 * such reference: a retained data claim, a pod owned by its ReplicaSet, another controller's object).
 */
export function controllingSuite(meta: {
  readonly ownerReferences?: readonly {
    apiVersion: string;
    kind: string;
    name: string;
    controller?: boolean;
  }[];
}): string | undefined {
  return meta.ownerReferences?.find(
    (o) => o.controller === true && o.kind === KIND && o.apiVersion.startsWith(`${GROUP}/`),
  )?.name;
}

/**
 * A parsed suite read from the API server, checked to carry what the builders need: its uid and
 * namespace (kept by the schema's loose metadata). Throws when either is missing.
 */
export function ownedSuite(suite: Suite): OwnedSuite {
  const { uid, namespace } = suite.metadata;
  if (typeof uid !== 'string' || uid === '' || typeof namespace !== 'string' || namespace === '') {
    throw new Error(`ClinicalSuite "${suite.metadata.name}" has no metadata.uid or metadata.namespace yet`);
  }
  return { ...suite, metadata: { ...suite.metadata, uid, namespace } };
}
