/**
 * A component's data directory (DATA_DIR, /data) in its pod. A component with an embedded store
 * (the catalogue's `sharedStoreEnv`: face's SQLite registry, the task agent's SQLite database)
 * whose spec env does not set that variable keeps its store in that directory, so it must outlive
 * the pod: a ReadWriteOnce PVC `<suite>-<dir>-data` (or `spec.services.<key>.storage.existingClaim`)
 * is mounted there, and the Deployment replaces its pod with `Recreate` so two pods never open one
 * SQLite file. Every other component, and one with the shared store set, gets an emptyDir.
 */
import { COMPONENTS, EMBEDDED_STORE_COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import { objectName } from './names.js';
import type { OwnedSuite } from './types.js';

export interface PodData {
  /** Claim mounted at /data, or null for an emptyDir. */
  readonly claimName: string | null;
  /** Whether the operator creates that claim (false for existingClaim). */
  readonly ownClaim: boolean;
}

/** Whether `key` keeps its store in its pod: it has an embedded store and its env names no shared one. */
export function usesEmbeddedStore(suite: OwnedSuite, key: ComponentKey): boolean {
  const shared = COMPONENTS[key].sharedStoreEnv;
  if (shared === undefined) return false;
  // An empty value names no database (the store wiring treats it as unset): keep a volume then too.
  const entry = suite.spec.services[key]?.env.find((e) => e.name === shared);
  // A reference to a Secret or ConfigMap key names a database the kubelet reads when the pod starts.
  if (entry?.valueFrom !== undefined) return false;
  return entry?.value === undefined || entry.value === '';
}

/** The name of the PVC the operator creates for `key`'s data: `<suite>-<dir>-data`. */
export function dataClaimName(suite: OwnedSuite, key: ComponentKey): string {
  return objectName(suite, key, 'data');
}

export function podData(suite: OwnedSuite, key: ComponentKey): PodData {
  if (!usesEmbeddedStore(suite, key)) return { claimName: null, ownClaim: false };
  const existingClaim = suite.spec.services[key]?.storage?.existingClaim;
  if (existingClaim !== undefined) return { claimName: existingClaim, ownClaim: false };
  return { claimName: dataClaimName(suite, key), ownClaim: true };
}

/**
 * The names of every data PVC this suite's operator may have created, whether or not the spec
 * still asks for it: the reconciler never deletes them as leftovers (a disabled service or a
 * DATABASE_URL set later must not take the data with it).
 */
export function dataClaimNames(suite: OwnedSuite): ReadonlySet<string> {
  return new Set(EMBEDDED_STORE_COMPONENTS.map((key) => dataClaimName(suite, key)));
}
