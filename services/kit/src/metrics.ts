import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConcurrencyGate, GateRejection } from './gate.js';
import type { BodyMemory } from './http/body-memory.js';
import { requestContext } from './http/context.js';

/**
 * Prometheus metrics every service exports, in one registry per app (tests build several apps in
 * one process). Every series carries the `service` label. HTTP series are labelled by route
 * template, never by raw path. Service-specific metrics use the service's own prefix
 * (`metrics.prefix`, e.g. `llm_`), registered on `metrics.registry`.
 */

export const HTTP_DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
] as const;

export interface KitMetrics {
  readonly registry: Registry;
  /** Prefix for the service's own metric names, e.g. `llm_`. */
  readonly prefix: string;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
}

export interface MetricsOptions {
  readonly service: string;
  readonly version: string;
  readonly gate: ConcurrencyGate;
  readonly bodyMemory: BodyMemory;
  readonly isReady: () => boolean;
  /** Process metrics (CPU, memory, event loop, GC). Off only in benchmarks of many apps. */
  readonly processMetrics?: boolean;
}

export function createMetrics(options: MetricsOptions): KitMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const { gate } = options;

  const httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its response, queue wait included.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [...HTTP_DURATION_BUCKETS],
    registers,
  });
  new Gauge({
    name: 'clinicalsuite_requests_running',
    help: 'Requests holding a concurrency slot (in work).',
    registers,
    collect() {
      this.set(gate.running);
    },
  });
  new Gauge({
    name: 'clinicalsuite_requests_waiting',
    help: 'Requests waiting in the queue for a concurrency slot.',
    registers,
    collect() {
      this.set(gate.waiting);
    },
  });
  new Gauge({
    name: 'clinicalsuite_concurrency_limit',
    help: 'Requests allowed in work at once (the gate limit).',
    registers,
    collect() {
      this.set(gate.limit);
    },
  });
  new Gauge({
    name: 'clinicalsuite_queue_capacity',
    help: 'Requests allowed to wait for a slot.',
    registers,
    collect() {
      this.set(gate.queueSize);
    },
  });
  const rejections = new Counter({
    name: 'clinicalsuite_gate_rejections_total',
    help: 'Requests refused by the concurrency gate with 429, by reason (queue_full, queue_timeout).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['queue_full', 'queue_timeout'] satisfies GateRejection[])
    rejections.inc({ reason }, 0);
  gate.onRejection((reason) => rejections.inc({ reason }));
  const { bodyMemory } = options;
  new Gauge({
    name: 'clinicalsuite_request_body_memory_bytes',
    help: 'Bytes of request bodies held in memory now (arriving, waiting and in work).',
    registers,
    collect() {
      this.set(bodyMemory.inUse);
    },
  });
  new Gauge({
    name: 'clinicalsuite_request_body_memory_limit_bytes',
    help: 'BODY_MEMORY_LIMIT: request body bytes allowed in memory at once.',
    registers,
  }).set(bodyMemory.limit);
  const bodyRefusals = new Counter({
    name: 'clinicalsuite_body_memory_rejections_total',
    help: 'Requests refused with 503 because request bodies in memory had reached BODY_MEMORY_LIMIT.',
    registers,
  });
  bodyRefusals.inc(0);
  bodyMemory.onRefusal(() => bodyRefusals.inc());
  new Gauge({
    name: 'clinicalsuite_ready',
    help: '1 when the service is ready to serve (model loaded), else 0.',
    registers,
    collect() {
      this.set(options.isReady() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'clinicalsuite_build_info',
    help: 'Always 1; the labels name the running version.',
    labelNames: ['version'] as const,
    registers,
  }).set({ version: options.version }, 1);

  return {
    registry,
    prefix: `${options.service.replace(/[^a-zA-Z0-9_]/g, '_')}_`,
    httpRequests,
    httpDuration,
  };
}

/** Counts and times every request once its response is finished or abandoned. */
export function httpMetricsMiddleware(metrics: KitMetrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const labels = {
        method: req.method,
        route: requestContext(req).route ?? 'unmatched',
        status: res.writableFinished ? String(res.statusCode) : '499',
      };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
