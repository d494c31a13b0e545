/**
 * The controller: workers take suite keys from the queue and reconcile them; a failure (thrown, or
 * a result carrying the writes the API server refused) comes back after its backoff, a rollout in
 * progress is looked at again after a while. Metrics carry controller-runtime's names so its stock
 * dashboards work.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from '@clinicalsuite/kit';
import { WorkQueue, type QueueMetrics } from './queue.js';
import type { Reconciler } from './reconcile.js';
import { SuiteMetrics } from './suite-metrics.js';

export const CONTROLLER_NAME = 'clinicalsuite';

export interface ControllerOptions {
  readonly reconciler: Reconciler;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly workers?: number;
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly workers: number;
  private running: Promise<void>[] = [];
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly suites: SuiteMetrics;

  constructor(private readonly options: ControllerOptions) {
    const registers = [options.registry];
    const name = CONTROLLER_NAME;
    this.workers = options.workers ?? 2;
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'] as const,
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'] as const,
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'] as const,
      registers,
    });
    new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'] as const,
      registers,
    }).set({ controller: name }, this.workers);
    for (const result of ['success', 'error', 'requeue_after'])
      this.reconcileTotal.inc({ controller: name, result }, 0);
    this.reconcileErrors.inc({ controller: name }, 0);
    this.queue = new WorkQueue({ metrics: queueMetrics(options.registry, name) });
    this.suites = new SuiteMetrics(options.registry);
  }

  start(): void {
    this.running = Array.from({ length: this.workers }, () => this.work());
  }

  async stop(): Promise<void> {
    this.queue.shutdown();
    await Promise.all(this.running);
  }

  private async work(): Promise<void> {
    const controller = CONTROLLER_NAME;
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const [namespace = '', name = ''] = key.split('/');
      const started = performance.now();
      this.activeWorkers.inc({ controller });
      const failed = (error: unknown) => {
        this.reconcileTotal.inc({ controller, result: 'error' });
        this.reconcileErrors.inc({ controller });
        this.options.logger.error(
          { err: error, suite: key, retries: this.queue.failuresOf(key) },
          'reconcile failed',
        );
        this.queue.addRateLimited(key);
      };
      try {
        const result = await this.options.reconciler.reconcile(namespace, name);
        if (result.status === undefined) this.suites.forget(namespace, name);
        else this.suites.observe(namespace, name, result.status);
        if (result.error !== undefined) {
          // Done as far as it could go (status written), but something was refused: back off.
          failed(result.error);
        } else if (result.requeueAfterMs !== undefined) {
          this.queue.forget(key);
          this.queue.addAfter(key, result.requeueAfterMs);
          this.reconcileTotal.inc({ controller, result: 'requeue_after' });
        } else {
          this.queue.forget(key);
          this.reconcileTotal.inc({ controller, result: 'success' });
        }
      } catch (error) {
        failed(error);
      } finally {
        const seconds = (performance.now() - started) / 1000;
        this.reconcileTime.observe({ controller }, seconds);
        this.activeWorkers.dec({ controller });
        this.queue.done(key, seconds);
      }
    }
  }
}

function queueMetrics(registry: Registry, name: string): QueueMetrics {
  const registers = [registry];
  const labelNames = ['name'] as const;
  const depth = new Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of workqueue',
    labelNames,
    registers,
  });
  const adds = new Counter({
    name: 'workqueue_adds_total',
    help: 'Total number of adds handled by workqueue',
    labelNames,
    registers,
  });
  const retries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Total number of retries handled by workqueue',
    labelNames,
    registers,
  });
  const buckets = [1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];
  const queued = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long in seconds an item stays in workqueue before being requested',
    labelNames,
    buckets,
    registers,
  });
  const worked = new Histogram({
    name: 'workqueue_work_duration_seconds',
    help: 'How long in seconds processing an item from workqueue takes',
    labelNames,
    buckets,
    registers,
  });
  // Every series of the queue exists from its creation, as client-go's workqueue metrics do, so
  // a retries panel reads 0 rather than nothing while no reconcile has failed.
  depth.set({ name }, 0);
  adds.inc({ name }, 0);
  retries.inc({ name }, 0);
  return {
    depth: (n) => depth.set({ name }, n),
    added: () => adds.inc({ name }),
    retried: () => retries.inc({ name }),
    queued: (s) => queued.observe({ name }, s),
    worked: (s) => worked.observe({ name }, s),
  };
}
