/**
 * Env vars set on containers rather than through the ConfigMap: the spec's entries that take their
 * value from a Secret or ConfigMap key (`valueFrom`), which the kubelet resolves when the pod starts
 * (the value never reaches the suite's CR, a ConfigMap or the operator), and the model-fetch init
 * containers' `model.fetchEnv`. Where a component is given another's variable (the task proxy gets
 * the task agent's DATABASE_URL) a reference is copied as a reference.
 */
import { COMPONENTS, type ComponentKey, type EnvVar as SpecEnvVar } from '../api/v1alpha1/index.js';
import type { OwnedSuite } from './types.js';
import type { EnvVar, KeyRef } from './wire.js';

function keyRef(ref: { name: string; key: string; optional?: boolean | undefined }): KeyRef {
  return { name: ref.name, key: ref.key, ...(ref.optional === undefined ? {} : { optional: ref.optional }) };
}

/** A spec env entry in wire form (stable key order). */
export function wireEnvVar(e: SpecEnvVar): EnvVar {
  const from = e.valueFrom;
  if (from === undefined) return { name: e.name, value: e.value ?? '' };
  return {
    name: e.name,
    valueFrom:
      from.secretKeyRef !== undefined
        ? { secretKeyRef: keyRef(from.secretKeyRef) }
        : // The schema requires exactly one of the two.
          { configMapKeyRef: keyRef(from.configMapKeyRef ?? { name: '', key: '' }) },
  };
}

/**
 * The referenced (`valueFrom`) env of `key`'s container: its spec's own, then, for a component that
 * reads another's store (`readsStoreOf`), the owner's shared store variable when the owner's spec
 * takes it from a Secret or ConfigMap (and `key`'s own spec does not set it).
 */
export function referencedEnv(suite: OwnedSuite, key: ComponentKey): EnvVar[] {
  const own = suite.spec.services[key]?.env ?? [];
  const refs = own.filter((e) => e.valueFrom !== undefined).map(wireEnvVar);
  const owner = COMPONENTS[key].readsStoreOf;
  const shared = owner === undefined || owner === key ? undefined : COMPONENTS[owner].sharedStoreEnv;
  if (owner === undefined || shared === undefined || own.some((e) => e.name === shared)) return refs;
  const ownerEntry = suite.spec.services[owner]?.env.find((e) => e.name === shared);
  return ownerEntry?.valueFrom === undefined ? refs : [...refs, wireEnvVar(ownerEntry)];
}

/**
 * `base` with `overrides` applied: an override replaces the entry of its name in place, the others
 * follow in their order. Kubernetes merges a container's env by name: one entry per name.
 */
export function mergeEnv(base: readonly EnvVar[], overrides: readonly EnvVar[]): EnvVar[] {
  const byName = new Map(overrides.map((e) => [e.name, e]));
  const merged = base.map((e) => byName.get(e.name) ?? e);
  const present = new Set(base.map((e) => e.name));
  return [...merged, ...overrides.filter((e) => !present.has(e.name))];
}

/** The env of `key`'s model-fetch init containers from its spec (`model.fetchEnv`). */
export function fetchEnv(suite: OwnedSuite, key: ComponentKey): EnvVar[] {
  return (suite.spec.services[key]?.model?.fetchEnv ?? []).map(wireEnvVar);
}
