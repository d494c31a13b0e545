/**
 * A component's ServiceMonitor (prometheus-operator's monitoring.coreos.com/v1) when
 * spec.monitoring.serviceMonitor is on: scrape /metrics on the `http` port at the spec's interval.
 * Whether the CRD exists in the cluster is the reconciler's question, not the builder's.
 *
 * The label contract the dashboards and alert rules in dashboards/ rely on: every series carries
 * - `service`: set by the service itself (the kit's registry default label, e.g. `llm`,
 *   `task_agent`). prometheus-operator sets a `service` target label (the Kubernetes Service's
 *   name); `honorLabels: true` keeps the service's own value instead of renaming it
 *   `exported_service`.
 *   Series Prometheus makes itself (`up`, `scrape_*`) carry the target's labels only, so the
 *   target's `service` label is relabelled to the same value: the component's directory
 *   (`app.kubernetes.io/component`) with `-` turned into `_`, as the kit names a service's series.
 * - `suite`: the ClinicalSuite's name, relabelled from the Service's `app.kubernetes.io/instance`.
 * - `namespace`: added by prometheus-operator.
 * The local runner's Prometheus scrape config mirrors this (target labels `namespace`, `suite` and
 * `service`, `honor_labels: true`).
 */
import { COMPONENTS, LABEL_COMPONENT, LABEL_INSTANCE, type ComponentKey } from '../api/v1alpha1/index.js';
import { selectorLabels } from './labels.js';
import { componentMetadata } from './metadata.js';
import { objectName } from './names.js';
import { PORT_NAME, type OwnedSuite } from './types.js';
import type { ServiceMonitorObject } from './wire.js';

/** The label every service sets on its own series (services/kit/src/metrics.ts). */
export const METRIC_LABEL_SERVICE = 'service';
/** The label naming the suite a series comes from, set at scrape time. */
export const METRIC_LABEL_SUITE = 'suite';
/** The label naming the namespace a series comes from, set at scrape time. */
export const METRIC_LABEL_NAMESPACE = 'namespace';

/** Prometheus' meta label for a Kubernetes Service label (non-alphanumerics become `_`). */
export function serviceLabelMeta(label: string): string {
  return `__meta_kubernetes_service_label_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`;
}

/** The `service` label a component's series carry: its directory with `-` as `_` (`task_agent`). */
export function metricServiceName(key: ComponentKey): string {
  return COMPONENTS[key].dir.replace(/-/g, '_');
}

export function buildServiceMonitor(suite: OwnedSuite, key: ComponentKey): ServiceMonitorObject | null {
  const { monitoring } = suite.spec;
  if (!monitoring.serviceMonitor) return null;
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: componentMetadata(suite, key, objectName(suite, key)),
    spec: {
      selector: { matchLabels: selectorLabels(suite, key) },
      endpoints: [
        {
          port: PORT_NAME,
          path: '/metrics',
          scheme: 'http',
          interval: monitoring.scrapeInterval,
          honorLabels: true,
          relabelings: [
            {
              action: 'replace',
              sourceLabels: [serviceLabelMeta(LABEL_INSTANCE)],
              targetLabel: METRIC_LABEL_SUITE,
            },
            {
              action: 'replace',
              sourceLabels: [serviceLabelMeta(LABEL_COMPONENT)],
              targetLabel: METRIC_LABEL_SERVICE,
            },
            // Component directories hold at most one `-` (task-agent, patient-sim); tested.
            {
              action: 'replace',
              sourceLabels: [METRIC_LABEL_SERVICE],
              regex: '(.+)-(.+)',
              replacement: '${1}_${2}',
              targetLabel: METRIC_LABEL_SERVICE,
            },
          ],
        },
      ],
    },
  };
}
