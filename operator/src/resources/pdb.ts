/** A component's PodDisruptionBudget, only when it runs more than one replica: at most one down. */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import type { OwnedSuite } from './types.js';
import type { PdbObject } from './wire.js';

export function buildPodDisruptionBudget(suite: OwnedSuite, key: ComponentKey): PdbObject | null {
  if ((suite.spec.services[key]?.replicas ?? 1) <= 1) return null;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(suite, key) } },
  };
}
