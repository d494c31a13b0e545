/** Metadata of a component's objects: name, namespace, labels, the controller ownerReference. */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { componentLabels } from './labels.js';
import { ownerReference } from './owner.js';
import type { OwnedSuite } from './types.js';
import type { ObjectMeta } from './wire.js';

export function componentMetadata(
  suite: OwnedSuite,
  key: ComponentKey,
  name: string,
  options: { readonly owned?: boolean; readonly annotations?: Record<string, string> } = {},
): ObjectMeta {
  return {
    name,
    namespace: suite.metadata.namespace,
    labels: componentLabels(suite, key),
    ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    ...(options.owned === false ? {} : { ownerReferences: [ownerReference(suite)] }),
  };
}
