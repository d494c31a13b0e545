/**
 * The recommended labels on every generated object. `name` is the service (its directory under
 * services/), `instance` the suite, `component` the service again (one suite runs each service
 * once), `part-of` clinicalsuite, `managed-by` the operator, `version` the image tag. Selectors
 * (Deployment, Service, PDB, NetworkPolicy, ServiceMonitor) use only the immutable identity:
 * never the version, which changes on every upgrade and would orphan pods.
 */
import {
  COMPONENTS,
  LABEL_COMPONENT,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_PART_OF,
  LABEL_VERSION,
  MANAGED_BY,
  PART_OF,
  type ComponentKey,
} from '../api/v1alpha1/index.js';
import type { OwnedSuite } from './types.js';

/** Selects the pods of one component of one suite. */
export function selectorLabels(suite: OwnedSuite, key: ComponentKey): Record<string, string> {
  return {
    [LABEL_NAME]: COMPONENTS[key].dir,
    [LABEL_INSTANCE]: suite.metadata.name,
    [LABEL_COMPONENT]: COMPONENTS[key].dir,
  };
}

/** Selects every pod of a suite (what a NetworkPolicy lets in). */
export function suitePodLabels(suite: OwnedSuite): Record<string, string> {
  return { [LABEL_INSTANCE]: suite.metadata.name, [LABEL_PART_OF]: PART_OF };
}

/** Labels of a component's objects and its pod template. */
export function componentLabels(suite: OwnedSuite, key: ComponentKey): Record<string, string> {
  return {
    ...selectorLabels(suite, key),
    [LABEL_PART_OF]: PART_OF,
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_VERSION]: labelValue(suite.spec.image.tag),
  };
}

/** A tag as a label value: at most 63 characters, starting and ending with a letter or digit. */
function labelValue(value: string): string {
  return value.slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}
