/**
 * A component's ServiceMonitor (prometheus-operator's monitoring.coreos.com/v1) when
 * spec.monitoring.serviceMonitor is on: scrape /metrics on the `http` port at the spec's interval.
 * Whether the CRD exists in the cluster is the reconciler's question, not the builder's.
 */
import type { ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import { PORT_NAME, type OwnedSuite } from './types.js';
import type { ServiceMonitorObject } from './wire.js';

export function buildServiceMonitor(suite: OwnedSuite, key: ComponentKey): ServiceMonitorObject | null {
  const { monitoring } = suite.spec;
  if (!monitoring.serviceMonitor) return null;
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: {
      selector: { matchLabels: selectorLabels(suite, key) },
      endpoints: [{ port: PORT_NAME, path: '/metrics', scheme: 'http', interval: monitoring.scrapeInterval }],
    },
  };
}
