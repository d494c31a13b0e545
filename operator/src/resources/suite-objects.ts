/**
 * Everything a suite owns, as data: for each enabled component in rollout (dependency) order, its
 * objects in a fixed kind order (config and storage before the workload that mounts them, the
 * workload before what selects it). The reconciler applies this list and deletes owned objects
 * not in it (disabled services, replicas back to 1, network policy switched off).
 */
import { dependencyOrder, type ComponentKey } from '../api/v1alpha1/index.js';
import { buildConfigMap } from './config-map.js';
import { buildDeployment } from './deployment.js';
import { buildNetworkPolicy } from './network-policy.js';
import type { OperatorConfig } from './operator-config.js';
import { buildPodDisruptionBudget } from './pdb.js';
import { buildDataPvc, buildModelPvc } from './pvc.js';
import { buildService } from './service.js';
import { buildServiceMonitor } from './service-monitor.js';
import type { OwnedSuite } from './types.js';
import type { KubeObject } from './wire.js';

type Builder = (suite: OwnedSuite, key: ComponentKey, config: OperatorConfig) => KubeObject | null;

/** Builders in the order their objects are listed (and applied) within one component. */
export const COMPONENT_BUILDERS: readonly Builder[] = [
  buildConfigMap,
  buildModelPvc,
  buildDataPvc,
  buildService,
  buildDeployment,
  buildPodDisruptionBudget,
  buildNetworkPolicy,
  buildServiceMonitor,
];

/** Enabled components, each after what it depends on (LLMs before the agent); catalogue order breaks ties. */
export function componentsInRolloutOrder(suite: OwnedSuite): ComponentKey[] {
  return dependencyOrder(suite.spec.services);
}

/** Every object of one enabled component. */
export function buildComponentObjects(
  suite: OwnedSuite,
  key: ComponentKey,
  config: OperatorConfig,
): KubeObject[] {
  return COMPONENT_BUILDERS.map((build) => build(suite, key, config)).filter(
    (o): o is KubeObject => o !== null,
  );
}

/**
 * Every object of the suite. Throws {@link ResourceProfileError} when a component names a profile
 * the operator config lacks (the reconciler reports it as a condition).
 */
export function buildSuiteObjects(suite: OwnedSuite, config: OperatorConfig): KubeObject[] {
  return componentsInRolloutOrder(suite).flatMap((key) => buildComponentObjects(suite, key, config));
}
