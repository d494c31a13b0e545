/**
 * The per-suite gauges (clinicalsuite_suite_ready …) that the dashboards and the
 * ClinicalSuiteNotReady alert read: set from the status computeStatus really produces, through the
 * controller's workers, and removed when a suite or one of its services goes away.
 */
import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { createLogger } from '@clinicalsuite/kit';
import { Controller } from '../../../operator/src/controller/controller.js';
import type { Reconciler, ReconcileResult } from '../../../operator/src/controller/reconcile.js';
import { computeStatus, type ObservedService } from '../../../operator/src/controller/status.js';
import { SUITE_METRIC_NAMES, SuiteMetrics } from '../../../operator/src/controller/suite-metrics.js';
import { lintExposition } from '../../observability/metrics-lint.js';

const NOW = '2026-11-21T10:00:00Z';

function service(component: ObservedService['component'], readyReplicas: number): ObservedService {
  return {
    component,
    endpoint: `http://s-${component}.ns.svc:8080`,
    deployment: {
      generation: 1,
      replicas: 1,
      status: { observedGeneration: 1, replicas: 1, readyReplicas, updatedReplicas: 1 },
    },
    pods: [],
  };
}

/** `name{labels} value` lines of the registry's exposition for one metric, labels sorted. */
async function series(registry: Registry, name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .sort();
}

describe('SuiteMetrics', () => {
  it('reports Ready, Degraded and each service from the computed status', async () => {
    const registry = new Registry();
    const metrics = new SuiteMetrics(registry);
    const ready = computeStatus([service('llm', 1), service('agent', 1)], undefined, 1, NOW);
    metrics.observe('clinical', 'ward', ready);
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([
      'clinicalsuite_suite_ready{namespace="clinical",suite="ward"} 1',
    ]);
    expect(await series(registry, SUITE_METRIC_NAMES.degraded)).toEqual([
      'clinicalsuite_suite_degraded{namespace="clinical",suite="ward"} 0',
    ]);
    expect(await series(registry, SUITE_METRIC_NAMES.componentReady)).toEqual([
      'clinicalsuite_suite_component_ready{namespace="clinical",suite="ward",component="agent"} 1',
      'clinicalsuite_suite_component_ready{namespace="clinical",suite="ward",component="llm"} 1',
    ]);

    // The agent loses its replica and the llm is disabled: its series goes, the agent reads 0.
    const unschedulable = {
      ...service('agent', 0),
      pods: [
        {
          name: 'ward-agent-x',
          phase: 'Pending',
          initContainers: [],
          containers: [],
          unschedulable: '0/2 nodes are available: 2 Insufficient nvidia.com/gpu.',
        },
      ],
    };
    metrics.observe('clinical', 'ward', computeStatus([unschedulable], ready, 2, NOW));
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([
      'clinicalsuite_suite_ready{namespace="clinical",suite="ward"} 0',
    ]);
    expect(await series(registry, SUITE_METRIC_NAMES.degraded)).toEqual([
      'clinicalsuite_suite_degraded{namespace="clinical",suite="ward"} 1',
    ]);
    expect(await series(registry, SUITE_METRIC_NAMES.componentReady)).toEqual([
      'clinicalsuite_suite_component_ready{namespace="clinical",suite="ward",component="agent"} 0',
    ]);
  });

  it('follows the naming and label rules every service metric follows (metrics lint)', async () => {
    const registry = new Registry();
    new SuiteMetrics(registry).observe(
      'clinical',
      'ward',
      computeStatus([service('llm', 1), service('patientSim', 0)], undefined, 1, NOW),
    );
    expect(lintExposition(await registry.metrics(), { service: 'operator' })).toEqual([]);
  });

  it('keeps suites apart and forgets a deleted one', async () => {
    const registry = new Registry();
    const metrics = new SuiteMetrics(registry);
    metrics.observe('a', 'x', computeStatus([service('taskAgent', 1)], undefined, 1, NOW));
    metrics.observe('b', 'x', computeStatus([service('llm', 0)], undefined, 1, NOW));
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([
      'clinicalsuite_suite_ready{namespace="a",suite="x"} 1',
      'clinicalsuite_suite_ready{namespace="b",suite="x"} 0',
    ]);
    metrics.forget('a', 'x');
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([
      'clinicalsuite_suite_ready{namespace="b",suite="x"} 0',
    ]);
    expect(await series(registry, SUITE_METRIC_NAMES.componentReady)).toEqual([
      'clinicalsuite_suite_component_ready{namespace="b",suite="x",component="llm"} 0',
    ]);
    metrics.observe('a', 'x', computeStatus([service('taskAgent', 1)], undefined, 1, NOW));
    // The component is named as the service names its own series (service="task_agent").
    expect(await series(registry, SUITE_METRIC_NAMES.componentReady)).toContain(
      'clinicalsuite_suite_component_ready{namespace="a",suite="x",component="task_agent"} 1',
    );
  });
});

describe('Controller', () => {
  it('sets the gauges from what each reconcile returns, and drops a suite that is gone', async () => {
    const registry = new Registry();
    const results = new Map<string, ReconcileResult>([
      ['ns/up', { status: computeStatus([service('tts', 1)], undefined, 1, NOW) }],
      ['ns/gone', {}],
    ]);
    const reconciler = {
      reconcile: (namespace: string, name: string) =>
        Promise.resolve(results.get(`${namespace}/${name}`) ?? {}),
    } as unknown as Reconciler;
    const controller = new Controller({
      reconciler,
      registry,
      logger: createLogger({ service: 'operator', level: 'silent' }),
      workers: 1,
    });
    controller.start();
    controller.queue.add('ns/gone');
    controller.queue.add('ns/up');
    for (let i = 0; i < 100 && (await series(registry, SUITE_METRIC_NAMES.ready)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([
      'clinicalsuite_suite_ready{namespace="ns",suite="up"} 1',
    ]);
    results.set('ns/up', {});
    controller.queue.add('ns/up');
    for (let i = 0; i < 100 && (await series(registry, SUITE_METRIC_NAMES.ready)).length > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(await series(registry, SUITE_METRIC_NAMES.ready)).toEqual([]);
    await controller.stop();
  });
});
