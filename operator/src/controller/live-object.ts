/**
 * What is checked and adjusted of the live object before one of the suite's objects is applied:
 * its name must not be taken by another suite's object, and a claim's storage request never drops
 * below the live claim's.
 */
import { LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY } from '../api/v1alpha1/index.js';
import type { KubeObjectLike } from '../k8s/client.js';
import { compareQuantities, controllingSuite, type OwnedSuite } from '../resources/index.js';

/**
 * An object name of this suite is taken by another suite's object (suite `a`'s task agent and suite
 * `a-task`'s agent are both `a-task-agent`): it is left as it is, never overwritten.
 */
export class NameConflictError extends Error {
  override readonly name = 'NameConflictError';
}

/**
 * A PersistentVolumeClaim to apply, its requests.storage raised to the live claim's where that is
 * larger (expanded by hand or by an autoscaler): a claim cannot shrink, and asking for less is
 * refused, which would leave the whole component unapplied.
 */
export function keepLargerClaim(
  obj: KubeObjectLike,
  live: { resources?: { requests?: { storage?: unknown } } } | undefined,
): KubeObjectLike {
  const current = live?.resources?.requests?.storage;
  if (obj.kind !== 'PersistentVolumeClaim' || typeof current !== 'string') return obj;
  const spec = (obj as { spec?: { resources?: { requests?: Record<string, unknown> } } }).spec;
  const wanted = spec?.resources?.requests?.['storage'];
  if (typeof wanted !== 'string' || spec === undefined) return obj;
  const order = compareQuantities(current, wanted);
  if (order === undefined || order <= 0) return obj;
  return {
    ...obj,
    spec: {
      ...spec,
      resources: { ...spec.resources, requests: { ...spec.resources?.requests, storage: current } },
    },
  };
}

export interface OwnedMeta {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; controller?: boolean }[];
}

/**
 * The other suite an existing object belongs to, or undefined (it is this suite's, no suite's, or
 * missing): its controller ownerReference to another ClinicalSuite, else (a retained data claim
 * has none) this operator's instance label naming another suite.
 */
export function otherSuite(suite: OwnedSuite, meta: OwnedMeta | undefined): string | undefined {
  if (meta === undefined) return undefined;
  const owner = controllingSuite(meta);
  if (owner !== undefined) return owner === suite.metadata.name ? undefined : owner;
  const instance = meta.labels?.[LABEL_INSTANCE];
  if (meta.labels?.[LABEL_MANAGED_BY] !== MANAGED_BY || instance === undefined) return undefined;
  return instance === suite.metadata.name ? undefined : instance;
}
