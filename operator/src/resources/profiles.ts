/**
 * Container resources and placement of a component: its spec's explicit `resources`, or the
 * resource profile it names (`<name>:<count>`, default the suite's GPU or CPU default profile)
 * looked up in the operator config, per-unit values multiplied by the count.
 */
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import type { OperatorConfig, ResourceProfile } from './operator-config.js';
import { multiplyQuantity } from './quantity.js';
import { sorted } from './stable.js';
import type { OwnedSuite } from './types.js';

/**
 * A profile reference the operator cannot resolve. The reconciler turns it into a condition on
 * the suite (`reason` is the condition's CamelCase reason) instead of failing the whole reconcile.
 */
export class ResourceProfileError extends Error {
  override readonly name = 'ResourceProfileError';
  constructor(
    readonly component: ComponentKey,
    /** The profile name (unknown) or the whole reference (invalid count). */
    readonly profile: string,
    readonly reason: 'UnknownResourceProfile' | 'InvalidResourceProfile',
    message: string,
  ) {
    super(`spec.services.${component}: ${message}`);
  }
}

export type Quantities = Readonly<Record<string, string>>;

export interface Placement {
  /** The reference used (`nvidia-gpu-l4:2`), or null when the spec set explicit `resources`. */
  readonly profile: string | null;
  readonly requests: Quantities;
  readonly limits: Quantities;
  /** Accelerators requested (0 on CPU). */
  readonly gpus: number;
  readonly nodeSelector: Quantities;
  readonly tolerations: ResourceProfile['tolerations'];
  readonly runtimeClassName: string | null;
  readonly imageVariant: 'cpu' | 'cuda';
}

/** The profile reference a component uses: its own, else the suite's GPU or CPU default. */
export function profileReference(suite: OwnedSuite, key: ComponentKey): string {
  const { spec } = suite;
  return (
    spec.services[key]?.resourceProfile ??
    (COMPONENTS[key].gpu ? spec.defaultGpuResourceProfile : spec.defaultResourceProfile)
  );
}

export function resolvePlacement(suite: OwnedSuite, key: ComponentKey, config: OperatorConfig): Placement {
  const explicit = suite.spec.services[key]?.resources;
  if (explicit !== undefined) return explicitPlacement(suite, explicit, config);
  const reference = profileReference(suite, key);
  const [name = '', countText = '1'] = reference.split(':');
  const profile = config.resourceProfiles[name];
  if (profile === undefined) {
    const known = Object.keys(config.resourceProfiles).sort().join(', ');
    const message = `unknown resource profile "${name}" (in "${reference}"); the operator knows: ${known}`;
    throw new ResourceProfileError(key, name, 'UnknownResourceProfile', message);
  }
  const count = Number(countText);
  if (!Number.isSafeInteger(count) || count < 1) {
    const message = `resource profile "${reference}" asks for ${countText} units; the count must be at least 1`;
    throw new ResourceProfileError(key, reference, 'InvalidResourceProfile', message);
  }
  const scale = (q: ResourceProfile['requests']) =>
    Object.fromEntries(
      Object.entries(q)
        .filter((e): e is [string, string] => e[1] !== undefined)
        .map(([k, v]) => [k, multiplyQuantity(v, count)]),
    );
  const requests: Record<string, string> = scale(profile.requests);
  const limits: Record<string, string> = scale(profile.limits);
  const gpus = profile.gpusPerUnit === undefined ? 0 : profile.gpusPerUnit * count;
  if (profile.gpuResourceName !== undefined && gpus > 0) {
    requests[profile.gpuResourceName] = String(gpus);
    limits[profile.gpuResourceName] = String(gpus);
  }
  return {
    profile: reference,
    requests: sorted(requests),
    limits: sorted(limits),
    gpus,
    nodeSelector: sorted(profile.nodeSelector),
    tolerations: profile.tolerations,
    runtimeClassName: profile.runtimeClassName ?? null,
    imageVariant: profile.imageVariant,
  };
}

/** The accelerators explicit resources ask for: the first resource a GPU profile names, and how many. */
function explicitGpus(
  requests: Quantities,
  limits: Quantities,
  config: OperatorConfig,
): { resourceName: string; count: number } | null {
  const names = new Set(
    Object.values(config.resourceProfiles)
      .map((p) => p.gpuResourceName)
      .filter((n): n is string => n !== undefined),
  );
  for (const resourceName of [...names].sort()) {
    // Kubernetes takes an extended resource's request from its limit when only the limit is set.
    const quantity = limits[resourceName] ?? requests[resourceName];
    if (quantity === undefined) continue;
    const count = Number(quantity);
    if (Number.isFinite(count) && count > 0) return { resourceName, count: Math.ceil(count) };
  }
  return null;
}

/**
 * Explicit `resources`: requests and limits as given. When they ask for an accelerator a GPU
 * profile names (`limits: {nvidia.com/gpu: "1"}`), the pod is a GPU pod as a profile would make
 * it: placed by the suite's default GPU profile when that profile asks for the same accelerator
 * (its node selector, tolerations, runtime class and image variant), otherwise by the first such
 * profile without a node selector (or else the first by name), its node selector left out since
 * the spec did not choose it.
 */
function explicitPlacement(
  suite: OwnedSuite,
  explicit: { readonly requests?: Quantities | undefined; readonly limits?: Quantities | undefined },
  config: OperatorConfig,
): Placement {
  const requests = sorted(explicit.requests ?? {});
  const limits = sorted(explicit.limits ?? {});
  const cpu: Placement = {
    profile: null,
    requests,
    limits,
    gpus: 0,
    nodeSelector: {},
    tolerations: [],
    runtimeClassName: null,
    imageVariant: 'cpu',
  };
  const gpu = explicitGpus(requests, limits, config);
  if (gpu === null) return cpu;
  const [defaultName = ''] = suite.spec.defaultGpuResourceProfile.split(':');
  const byDefault = config.resourceProfiles[defaultName];
  const sameAccelerator = Object.entries(config.resourceProfiles)
    .filter(([, p]) => p.gpuResourceName === gpu.resourceName)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, p]) => p);
  const [profile, nodeSelector] =
    byDefault?.gpuResourceName === gpu.resourceName
      ? [byDefault, byDefault.nodeSelector]
      : [sameAccelerator.find((p) => Object.keys(p.nodeSelector).length === 0) ?? sameAccelerator[0], {}];
  if (profile === undefined) return cpu;
  return {
    ...cpu,
    gpus: gpu.count,
    nodeSelector: sorted(nodeSelector),
    tolerations: profile.tolerations,
    runtimeClassName: profile.runtimeClassName ?? null,
    imageVariant: profile.imageVariant,
  };
}
