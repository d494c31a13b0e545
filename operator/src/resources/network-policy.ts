/**
 * NetworkPolicies (spec.networkPolicy.enabled) for the services that only the suite itself calls: a
 * second wall behind their bearer tokens. Only the suite's own pods (`instance=<suite>`,
 * `part-of=clinicalsuite`, same namespace) may reach them on 8080. When the suite has monitoring
 * on, Prometheus is let in too: pods labelled `prometheus.podLabels` in the namespace
 * `prometheus.namespace` of the operator config (default prometheus-operator's
 * `app.kubernetes.io/name: prometheus` in `monitoring`). The front doors, which apps and users call
 * from outside the suite (the llm, the agent and the task agent with their tokens, the task proxy
 * with its sign-in), stay open. Kubelet probes are not affected (node traffic is not pod ingress
 * for common CNIs).
 */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels, suitePodLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import type { OperatorConfig } from './operator-config.js';
import { sorted } from './stable.js';
import { POD_PORT, type OwnedSuite } from './types.js';
import type { NetworkPolicyObject, NetworkPolicyPeer } from './wire.js';

/** The components called from outside the suite. */
const FRONT_DOORS: ReadonlySet<ComponentKey> = new Set(['llm', 'agent', 'taskAgent', 'taskProxy']);

/** Whether apps and users outside the suite call the component (and so it gets no NetworkPolicy). */
export function isFrontDoor(key: ComponentKey): boolean {
  return FRONT_DOORS.has(key);
}

export function buildNetworkPolicy(
  suite: OwnedSuite,
  key: ComponentKey,
  config: OperatorConfig,
): NetworkPolicyObject | null {
  if (!suite.spec.networkPolicy.enabled || isFrontDoor(key)) return null;
  const from: NetworkPolicyPeer[] = [{ podSelector: { matchLabels: suitePodLabels(suite) } }];
  if (suite.spec.monitoring.serviceMonitor) {
    from.push({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': config.prometheus.namespace } },
      podSelector: { matchLabels: sorted(config.prometheus.podLabels) },
    });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: {
      podSelector: { matchLabels: selectorLabels(suite, key) },
      policyTypes: ['Ingress'],
      ingress: [{ from, ports: [{ protocol: 'TCP', port: POD_PORT }] }],
    },
  };
}
