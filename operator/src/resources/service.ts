/** A component's Service: ClusterIP, port 8080 named http, selecting its pods. */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import { POD_PORT, PORT_NAME, type OwnedSuite } from './types.js';
import type { ServiceObject } from './wire.js';

export function buildService(suite: OwnedSuite, key: ComponentKey): ServiceObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(suite, key),
      ports: [{ name: PORT_NAME, port: POD_PORT, targetPort: PORT_NAME, protocol: 'TCP' }],
    },
  };
}
