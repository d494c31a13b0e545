/**
 * NetworkPolicies (spec.networkPolicy.enabled) for the services that carry no auth of their own:
 * only the suite's own pods (`instance=<suite>`, `part-of=clinicalsuite`, same namespace) may
 * reach them on 8080. When the suite has monitoring on, Prometheus is let in too: pods labelled
 * `prometheus.podLabels` in the namespace `prometheus.namespace` of the operator config (default
 * prometheus-operator's `app.kubernetes.io/name: prometheus` in `monitoring`). The services that
 * check a bearer token (llm, agent, taskAgent) or a session (taskProxy) are the suite's front doors
 * and stay open (so the task proxy reaches the task agent, token in hand). Kubelet probes are not affected (node traffic is not pod ingress for common CNIs).
 */
import { COMPONENTS, type ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels, suitePodLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import type { OperatorConfig } from './operator-config.js';
import { sorted } from './stable.js';
import { POD_PORT, type OwnedSuite } from './types.js';
import type { NetworkPolicyObject, NetworkPolicyPeer } from './wire.js';

/** Components that authenticate callers other than by a bearer token the catalogue lists. */
const SESSION_AUTHENTICATED: ReadonlySet<ComponentKey> = new Set(['taskProxy']);

/** Whether a component checks who calls it (and so needs no NetworkPolicy). */
export function carriesAuth(key: ComponentKey): boolean {
  return COMPONENTS[key].tokenEnv.length > 0 || SESSION_AUTHENTICATED.has(key);
}

export function buildNetworkPolicy(
  suite: OwnedSuite,
  key: ComponentKey,
  config: OperatorConfig,
): NetworkPolicyObject | null {
  if (!suite.spec.networkPolicy.enabled || carriesAuth(key)) return null;
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
