import { Counter, Histogram, type Registry } from 'prom-client';
import { HTTP_DURATION_BUCKETS } from '../metrics.js';

/**
 * The outbound calls of a service, on its kit registry, one set per registry shared by all its
 * clients (docs/architecture.md §9): every HTTP exchange with an upstream counted and timed (to the
 * end of its body) by `upstream` (the client's fixed name), `method` and `outcome` (the status
 * class `2xx`…`5xx`, or `timeout`, `aborted`, `unreachable`); retries counted by reason
 * (`connection`, `status_503`…).
 */

export type OutboundOutcome = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'aborted' | 'unreachable';

export const OUTBOUND_METRIC_NAMES = {
  requests: 'http_client_requests_total',
  duration: 'http_client_request_duration_seconds',
  retries: 'http_client_retries_total',
} as const;

export interface OutboundMetrics {
  readonly requests: Counter<'upstream' | 'method' | 'outcome'>;
  readonly duration: Histogram<'upstream' | 'method' | 'outcome'>;
  readonly retries: Counter<'upstream' | 'method' | 'reason'>;
}

const byRegistry = new WeakMap<Registry, OutboundMetrics>();

export function outboundMetrics(registry: Registry): OutboundMetrics {
  const known = byRegistry.get(registry);
  if (known !== undefined) return known;
  const registers = [registry];
  const metrics: OutboundMetrics = {
    requests: new Counter({
      name: OUTBOUND_METRIC_NAMES.requests,
      help: 'HTTP requests this service made to an upstream, by upstream, method and outcome (status class, timeout, aborted, unreachable).',
      labelNames: ['upstream', 'method', 'outcome'] as const,
      registers,
    }),
    duration: new Histogram({
      name: OUTBOUND_METRIC_NAMES.duration,
      help: 'Time from sending a request to an upstream to the end of its response body, by upstream, method and outcome.',
      labelNames: ['upstream', 'method', 'outcome'] as const,
      buckets: [...HTTP_DURATION_BUCKETS],
      registers,
    }),
    retries: new Counter({
      name: OUTBOUND_METRIC_NAMES.retries,
      help: 'Requests to an upstream sent again after a failure, by upstream, method and reason.',
      labelNames: ['upstream', 'method', 'reason'] as const,
      registers,
    }),
  };
  byRegistry.set(registry, metrics);
  return metrics;
}

export function statusOutcome(status: number): OutboundOutcome {
  if (status < 200) return '1xx';
  if (status < 300) return '2xx';
  if (status < 400) return '3xx';
  return status < 500 ? '4xx' : '5xx';
}
