/**
 * The ServiceMonitor's label contract (dashboards/README.md): the service's own `service` label
 * survives (honorLabels), `suite` comes from the Service's `app.kubernetes.io/instance` label, and
 * the target's `service` label (what `up` carries) is the value the service's own series carry.
 * The relabelings are applied here the way Prometheus applies `replace` rules, to the target labels
 * prometheus-operator sets before them and the meta labels of the Service the builder renders, so a
 * rule naming a label the Service does not carry fails. The expected `service` values are read from
 * each service's source (the name it gives the kit), not from the operator.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { COMPONENT_KEYS, COMPONENTS } from '../../../operator/src/api/v1alpha1/index.js';
import {
  buildService,
  buildServiceMonitor,
  METRIC_LABEL_SERVICE,
  METRIC_LABEL_SUITE,
  metricServiceName,
  serviceLabelMeta,
  type ServiceMonitorEndpoint,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

/** Prometheus' `replace` action: anchored regex (default `(.*)`), `${n}` replacement (default `$1`). */
function relabel(target: Record<string, string>, endpoint: ServiceMonitorEndpoint): Record<string, string> {
  const out = { ...target };
  for (const rule of endpoint.relabelings) {
    const value = rule.sourceLabels.map((l) => out[l] ?? '').join(';');
    const match = new RegExp(`^(?:${rule.regex ?? '(.*)'})$`).exec(value);
    if (match === null) continue;
    const replaced = (rule.replacement ?? '$1').replace(
      /\$\{?(\d+)\}?/g,
      (_, n: string) => match[Number(n)] ?? '',
    );
    out[rule.targetLabel] = replaced; // an empty value drops the label, filtered below
  }
  return Object.fromEntries(Object.entries(out).filter(([k, v]) => !k.startsWith('__') && v !== ''));
}

/** The name a service gives the kit (`buildApp({ service })`), read from its source. */
function kitServiceName(dir: string): string {
  const app = readFileSync(new URL(`../../../services/${dir}/src/app.ts`, import.meta.url), 'utf8');
  const name = /export const SERVICE = '([^']+)'/.exec(app)?.[1] ?? /\bservice: '([^']+)'/.exec(app)?.[1];
  if (name === undefined) throw new Error(`no service name found in services/${dir}/src/app.ts`);
  return name;
}

const everything = Object.fromEntries(COMPONENT_KEYS.map((k) => [k, { enabled: true }]));
const suite = suiteWith(everything, { monitoring: { serviceMonitor: true } }, 'ward-7');

describe('ServiceMonitor label contract', () => {
  it.each(COMPONENT_KEYS)('%s: keeps the service label, sets suite and the target service label', (key) => {
    const endpoint = buildServiceMonitor(suite, key)?.spec.endpoints[0];
    expect(endpoint?.honorLabels).toBe(true);
    const service = buildService(suite, key);
    const meta = Object.fromEntries(
      Object.entries(service.metadata.labels).map(([k, v]) => [serviceLabelMeta(k), v]),
    );
    // What prometheus-operator sets before the endpoint's own relabelings.
    const target = {
      ...meta,
      namespace: 'clinical',
      service: service.metadata.name,
      job: service.metadata.name,
    };
    const name = kitServiceName(COMPONENTS[key].dir);
    expect(metricServiceName(key)).toBe(name);
    expect(relabel(target, endpoint!)).toEqual({
      namespace: 'clinical',
      job: service.metadata.name,
      [METRIC_LABEL_SUITE]: 'ward-7',
      [METRIC_LABEL_SERVICE]: name,
    });
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
