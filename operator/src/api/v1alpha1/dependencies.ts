/**
 * The dependency graph between enabled components: what each one waits for, the order to start
 * them in, and what is wrong with a spec's `dependsOn` lists. Pure functions of `spec.services`.
 */
import { COMPONENT_KEYS, COMPONENTS, type ComponentKey } from './components.js';

/** The part of `spec.services` the graph needs (structural, so the schema can use it while it is built). */
export type ServicesLike = {
  readonly [K in ComponentKey]?:
    { readonly enabled: boolean; readonly dependsOn?: readonly ComponentKey[] | undefined } | undefined;
};

export interface DependencyIssue {
  /** Path below `spec.services`. */
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** Enabled components in catalogue order. */
export function enabledComponents(services: ServicesLike): ComponentKey[] {
  return COMPONENT_KEYS.filter((key) => services[key]?.enabled === true);
}

/**
 * What `key` waits for and calls: its spec's `dependsOn` when set, otherwise the catalogue's
 * dependencies that are enabled (a disabled default dependency is simply not wired).
 */
export function effectiveDependsOn(services: ServicesLike, key: ComponentKey): ComponentKey[] {
  const explicit = services[key]?.dependsOn;
  if (explicit !== undefined) return [...new Set(explicit)];
  return COMPONENTS[key].dependsOn.filter((dep) => services[dep]?.enabled === true);
}

/** A dependency cycle among `nodes` as `[a, b, …, a]`, or null. Deterministic: catalogue order. */
export function findCycle(
  nodes: readonly ComponentKey[],
  depsOf: (key: ComponentKey) => readonly ComponentKey[],
): ComponentKey[] | null {
  const state = new Map<ComponentKey, 'visiting' | 'done'>();
  const stack: ComponentKey[] = [];
  const visit = (key: ComponentKey): ComponentKey[] | null => {
    const seen = state.get(key);
    if (seen === 'done') return null;
    if (seen === 'visiting') return [...stack.slice(stack.indexOf(key)), key];
    state.set(key, 'visiting');
    stack.push(key);
    for (const dep of depsOf(key)) {
      if (!nodes.includes(dep)) continue;
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(key, 'done');
    return null;
  };
  for (const key of nodes) {
    const cycle = visit(key);
    if (cycle) return cycle;
  }
  return null;
}

/** Everything wrong with the `dependsOn` lists of enabled components. */
export function dependencyIssues(services: ServicesLike): DependencyIssue[] {
  const issues: DependencyIssue[] = [];
  const enabled = enabledComponents(services);
  for (const key of enabled) {
    const explicit = services[key]?.dependsOn;
    if (explicit === undefined) continue;
    explicit.forEach((dep, index) => {
      const path = [key, 'dependsOn', index];
      if (explicit.indexOf(dep) !== index) {
        issues.push({ path, message: `"${dep}" is listed more than once` });
      } else if (services[dep]?.enabled !== true) {
        issues.push({
          path,
          message: `"${dep}" is not enabled: set spec.services.${dep}.enabled: true or remove it from dependsOn`,
        });
      }
    });
  }
  const cycle = findCycle(enabled, (key) => effectiveDependsOn(services, key));
  if (cycle) {
    const first = cycle[0] as ComponentKey;
    issues.push({ path: [first, 'dependsOn'], message: `dependency cycle: ${cycle.join(' -> ')}` });
  }
  return issues;
}

/**
 * Enabled components so that every component comes after its dependencies; among components
 * that could go next, catalogue order decides. Throws on a cycle (a parsed suite has none).
 */
export function dependencyOrder(services: ServicesLike): ComponentKey[] {
  const pending = enabledComponents(services);
  const placed: ComponentKey[] = [];
  while (pending.length > 0) {
    const index = pending.findIndex((key) =>
      effectiveDependsOn(services, key).every((dep) => placed.includes(dep) || !pending.includes(dep)),
    );
    if (index < 0) {
      const cycle = findCycle(pending, (key) => effectiveDependsOn(services, key)) ?? pending;
      throw new Error(`dependency cycle: ${cycle.join(' -> ')}`);
    }
    placed.push(...pending.splice(index, 1));
  }
  return placed;
}

/** Enabled components whose effective `dependsOn` includes `key`. */
export function dependentsOf(services: ServicesLike, key: ComponentKey): ComponentKey[] {
  return enabledComponents(services).filter((other) => effectiveDependsOn(services, other).includes(key));
}
