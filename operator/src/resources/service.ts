/**
 * A component's Service: ClusterIP, port 8080 named http, selecting its pods; ClientIP affinity for
 * a component that keeps sessions in memory (the agent, the task proxy's sign-ins), for as long as
 * its sessions live by default. Behind an ingress every client comes from the ingress's pods: pin
 * sessions there too (cookie affinity on PHPSESSID for the task proxy).
 */
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import { POD_PORT, PORT_NAME, type OwnedSuite } from './types.js';
import type { ServiceObject } from './wire.js';

/**
 * The agent's default session TTL (AGENT_SESSION_TTL_S), longer than the task proxy's idle timeout
 * (TASK_PROXY_SESSION_IDLE_S, 1800 s), so a client keeps its pod while its session lives.
 */
export const SESSION_AFFINITY_SECONDS = 3600;

export function buildService(suite: OwnedSuite, key: ComponentKey): ServiceObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(suite, key),
      ports: [{ name: PORT_NAME, port: POD_PORT, targetPort: PORT_NAME, protocol: 'TCP' }],
      ...(COMPONENTS[key].sessionAffinity === true
        ? {
            sessionAffinity: 'ClientIP' as const,
            sessionAffinityConfig: { clientIP: { timeoutSeconds: SESSION_AFFINITY_SECONDS } },
          }
        : {}),
    },
  };
}
