import { Counter, Gauge, Histogram } from 'prom-client';
import type { KitMetrics } from '../metrics.js';

/**
 * The serving metrics every chat-completions service exports, modelled on vLLM's (`vllm:` becomes
 * the service's prefix: `llm_`, `medllm_`), so one dashboard reads them all: requests running and
 * waiting, time to first token, inter-token latency, end-to-end latency and queue time
 * (histograms with vLLM's buckets), prompt and generated tokens, finished requests by finish reason
 * and stopped ones by reason. A service adds its own beside them.
 */

// vLLM's buckets.
const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const LATENCY_BUCKETS = [
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920,
];

export interface ServingMetrics {
  readonly timeToFirstToken: Histogram;
  readonly interTokenLatency: Histogram;
  readonly e2eLatency: Histogram;
  readonly queueTime: Histogram;
  readonly promptTokens: Counter;
  readonly generationTokens: Counter;
  readonly requestSuccess: Counter<'finished_reason'>;
  readonly requestsAborted: Counter<'reason'>;
}

export interface ServingMetricsOptions {
  /** Requests being generated, and waiting for a slot (read at scrape time). */
  readonly running: () => number;
  readonly waiting: () => number;
  /** Where the service's measurements differ from the plain meaning, its own HELP text. */
  readonly help?: Partial<
    Record<
      'running' | 'waiting' | 'timeToFirstToken' | 'interTokenLatency' | 'queueTime' | 'promptTokens',
      string
    >
  >;
}

/** Registers the serving metrics on the service's registry, under its prefix. */
export function createServingMetrics(kit: KitMetrics, options: ServingMetricsOptions): ServingMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  const help = options.help ?? {};
  new Gauge({
    name: `${p}num_requests_running`,
    help: help.running ?? 'Requests being generated.',
    registers,
    collect() {
      this.set(options.running());
    },
  });
  new Gauge({
    name: `${p}num_requests_waiting`,
    help: help.waiting ?? 'Requests waiting for a slot.',
    registers,
    collect() {
      this.set(options.waiting());
    },
  });
  const requestSuccess = new Counter({
    name: `${p}request_success_total`,
    help: 'Requests that finished, by finish reason (stop, length).',
    labelNames: ['finished_reason'] as const,
    registers,
  });
  for (const reason of ['stop', 'length']) requestSuccess.inc({ finished_reason: reason }, 0);
  return {
    timeToFirstToken: new Histogram({
      name: `${p}time_to_first_token_seconds`,
      help:
        help.timeToFirstToken ??
        'Time from the request’s arrival to its first generated token, queue wait included.',
      buckets: TTFT_BUCKETS,
      registers,
    }),
    interTokenLatency: new Histogram({
      name: `${p}inter_token_latency_seconds`,
      help: help.interTokenLatency ?? 'Time between two generated tokens of one request.',
      buckets: ITL_BUCKETS,
      registers,
    }),
    e2eLatency: new Histogram({
      name: `${p}e2e_request_latency_seconds`,
      help: 'Time from the request’s arrival to its last token.',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    queueTime: new Histogram({
      name: `${p}request_queue_time_seconds`,
      help: help.queueTime ?? 'Time a request waited for a slot.',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    promptTokens: new Counter({
      name: `${p}prompt_tokens_total`,
      help: help.promptTokens ?? 'Prompt tokens of finished and stopped requests.',
      registers,
    }),
    generationTokens: new Counter({
      name: `${p}generation_tokens_total`,
      help: 'Generated tokens.',
      registers,
    }),
    requestSuccess,
    requestsAborted: new Counter({
      name: `${p}request_aborted_total`,
      help: 'Generations stopped before they finished, by reason (client_closed, timeout, error).',
      labelNames: ['reason'] as const,
      registers,
    }),
  };
}
