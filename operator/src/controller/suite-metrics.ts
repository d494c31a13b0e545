/**
 * Per-suite state as Prometheus gauges, set from the status the reconciler computed (so a
 * dashboard and the `ClinicalSuiteNotReady` alert read what `kubectl get clinicalsuite` shows):
 * `clinicalsuite_suite_ready` and `clinicalsuite_suite_degraded` (1/0 from the suite's `Ready` and
 * `Degraded` conditions) and `clinicalsuite_suite_component_ready` per enabled service (its
 * `component` label holds the name the service's own series carry in `service`, e.g. `task_agent`,
 * so the two join). Labelled
 * by the suite's `namespace` and name (`suite`), the same labels a service's series get at scrape
 * time; the chart's ServiceMonitor honours them. A deleted suite's series are removed, and so are
 * those of a service that was disabled. Bounded: one series per suite and per enabled service.
 */
import { Gauge, type Registry } from 'prom-client';
import type { ComponentKey, SuiteStatus } from '../api/v1alpha1/index.js';
import { metricServiceName } from '../resources/index.js';

export const SUITE_METRIC_NAMES = {
  ready: 'clinicalsuite_suite_ready',
  degraded: 'clinicalsuite_suite_degraded',
  componentReady: 'clinicalsuite_suite_component_ready',
} as const;

type SuiteLabel = 'namespace' | 'suite';

export class SuiteMetrics {
  private readonly ready: Gauge<SuiteLabel>;
  private readonly degraded: Gauge<SuiteLabel>;
  private readonly componentReady: Gauge<SuiteLabel | 'component'>;
  /** The components each suite has series for, by `namespace/name`. */
  private readonly components = new Map<string, Set<string>>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.ready = new Gauge({
      name: SUITE_METRIC_NAMES.ready,
      help: "1 when the ClinicalSuite's Ready condition is True, else 0.",
      labelNames: ['namespace', 'suite'] as const,
      registers,
    });
    this.degraded = new Gauge({
      name: SUITE_METRIC_NAMES.degraded,
      help: "1 when the ClinicalSuite's Degraded condition is True (a failure, not a rollout), else 0.",
      labelNames: ['namespace', 'suite'] as const,
      registers,
    });
    this.componentReady = new Gauge({
      name: SUITE_METRIC_NAMES.componentReady,
      help: 'By component: 1 when every replica of an enabled service of a ClinicalSuite is ready, else 0.',
      labelNames: ['namespace', 'suite', 'component'] as const,
      registers,
    });
  }

  /** Sets the suite's gauges from the status just computed for it. */
  observe(namespace: string, suite: string, status: SuiteStatus): void {
    const labels = { namespace, suite };
    const condition = (type: string) => status.conditions?.find((c) => c.type === type)?.status === 'True';
    this.ready.set(labels, condition('Ready') ? 1 : 0);
    this.degraded.set(labels, condition('Degraded') ? 1 : 0);
    const key = `${namespace}/${suite}`;
    const now = new Set<string>();
    for (const [component, service] of Object.entries(status.services ?? {})) {
      if (service === undefined) continue;
      const name = metricServiceName(component as ComponentKey);
      now.add(name);
      this.componentReady.set({ ...labels, component: name }, service.ready ? 1 : 0);
    }
    for (const gone of this.components.get(key) ?? [])
      if (!now.has(gone)) this.componentReady.remove({ ...labels, component: gone });
    this.components.set(key, now);
  }

  /** Removes a suite's series (it was deleted). */
  forget(namespace: string, suite: string): void {
    const labels = { namespace, suite };
    this.ready.remove(labels);
    this.degraded.remove(labels);
    const key = `${namespace}/${suite}`;
    for (const component of this.components.get(key) ?? [])
      this.componentReady.remove({ ...labels, component });
    this.components.delete(key);
  }
}
