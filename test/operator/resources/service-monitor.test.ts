/**
 * The ServiceMonitor's label contract (dashboards/README.md): the service's own `service` label
 * survives (honorLabels) and `suite` comes from the Service's `app.kubernetes.io/instance` label.
 * The relabeling is applied here the way Prometheus applies a `replace` rule to the meta labels of
 * the Service the builder renders, so a rule naming a label the Service does not carry fails.
 */
import { describe, expect, it } from '@jest/globals';
import { COMPONENT_KEYS } from '../../../operator/src/api/v1alpha1/index.js';
import {
  buildService,
  buildServiceMonitor,
  METRIC_LABEL_SUITE,
  serviceLabelMeta,
  type ServiceMonitorEndpoint,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

/** Prometheus' `replace` action with its defaults (separator `;`, regex `(.*)`, replacement `$1`). */
function relabel(target: Record<string, string>, endpoint: ServiceMonitorEndpoint): Record<string, string> {
  const out = { ...target };
  for (const rule of endpoint.relabelings) {
    const value = rule.sourceLabels.map((l) => out[l] ?? '').join(';');
    if (value !== '') out[rule.targetLabel] = value;
  }
  return Object.fromEntries(Object.entries(out).filter(([k]) => !k.startsWith('__')));
}

const everything = Object.fromEntries(COMPONENT_KEYS.map((k) => [k, { enabled: true }]));
const suite = suiteWith(everything, { monitoring: { serviceMonitor: true } }, 'ward-7');

describe('ServiceMonitor label contract', () => {
  it.each(COMPONENT_KEYS)('%s: keeps the service label and sets suite from the Service', (key) => {
    const monitor = buildServiceMonitor(suite, key);
    const endpoint = monitor?.spec.endpoints[0];
    expect(endpoint?.honorLabels).toBe(true);
    const service = buildService(suite, key);
    const meta = Object.fromEntries(
      Object.entries(service.metadata.labels).map(([k, v]) => [serviceLabelMeta(k), v]),
    );
    expect(relabel(meta, endpoint!)).toEqual({ [METRIC_LABEL_SUITE]: 'ward-7' });
  });

  it('names the meta label as Prometheus sanitizes it', () => {
    expect(serviceLabelMeta('app.kubernetes.io/instance')).toBe(
      '__meta_kubernetes_service_label_app_kubernetes_io_instance',
    );
  });

  it('selects only its own component of its own suite', () => {
    const monitor = buildServiceMonitor(suite, 'llm');
    const other = buildServiceMonitor(
      suiteWith(everything, { monitoring: { serviceMonitor: true } }, 'b'),
      'llm',
    );
    expect(monitor?.spec.selector.matchLabels).toEqual(buildService(suite, 'llm').spec.selector);
    expect(monitor?.spec.selector.matchLabels).not.toEqual(other?.spec.selector.matchLabels);
  });
});
