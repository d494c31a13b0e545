/**
 * The controller's workers: a reconcile that returns the writes the API server refused is a
 * failure (counted, retried with the key's backoff), though its status is still taken.
 */
import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { createLogger } from '@clinicalsuite/kit';
import { Controller } from '../../../operator/src/controller/controller.js';
import {
  ApplyFailedError,
  type Reconciler,
  type ReconcileResult,
} from '../../../operator/src/controller/reconcile.js';
import { computeStatus } from '../../../operator/src/controller/status.js';

const NOW = '2026-11-21T10:00:00Z';

async function value(registry: Registry, line: string): Promise<string | undefined> {
  return (await registry.metrics()).split('\n').find((l) => l.startsWith(line));
}

describe('Controller', () => {
  it('retries a reconcile whose result carries refused writes, with backoff, and counts it as an error', async () => {
    const registry = new Registry();
    const status = computeStatus(
      [{ component: 'llm', endpoint: 'x', pods: [], applyError: 'PersistentVolumeClaim s-llm-models: 422' }],
      undefined,
      1,
      NOW,
    );
    const calls: number[] = [];
    const reconciler = {
      reconcile: (): Promise<ReconcileResult> => {
        calls.push(performance.now());
        // Refused twice, then accepted.
        return Promise.resolve(
          calls.length <= 2 ? { status, error: new ApplyFailedError(['llm: refused']) } : { status },
        );
      },
    } as unknown as Reconciler;
    const controller = new Controller({
      reconciler,
      registry,
      logger: createLogger({ service: 'operator', level: 'silent' }),
      workers: 1,
    });
    controller.start();
    controller.queue.add('ns/s');
    for (let i = 0; i < 200 && calls.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
    await controller.stop();

    expect(calls).toHaveLength(3);
    expect(await value(registry, 'controller_runtime_reconcile_errors_total{')).toBe(
      'controller_runtime_reconcile_errors_total{controller="clinicalsuite"} 2',
    );
    expect(await value(registry, 'workqueue_retries_total{')).toBe(
      'workqueue_retries_total{name="clinicalsuite"} 2',
    );
    expect(
      await value(
        registry,
        'controller_runtime_reconcile_total{controller="clinicalsuite",result="success"}',
      ),
    ).toBe('controller_runtime_reconcile_total{controller="clinicalsuite",result="success"} 1');
    // The status of a failed reconcile still reaches the suite gauges.
    expect(await value(registry, 'clinicalsuite_suite_degraded{')).toBe(
      'clinicalsuite_suite_degraded{namespace="ns",suite="s"} 1',
    );
    expect(controller.queue.failuresOf('ns/s')).toBe(0);
  });
});
