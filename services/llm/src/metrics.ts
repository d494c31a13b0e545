import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { FinishReason } from './domain/types.js';

/**
 * The LLM's own metrics, modelled on vLLM's (`vllm:` becomes `llm_`). Requests running and waiting
 * are the kit's `clinicalsuite_requests_running` / `_waiting` gauges (the gate is the scheduler);
 * `llm_num_requests_running` / `_waiting` repeat them under vLLM's names for stock dashboards.
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

export interface LlmMetrics {
  readonly timeToFirstToken: Histogram;
  readonly interTokenLatency: Histogram;
  readonly e2eLatency: Histogram;
  readonly queueTime: Histogram;
  readonly promptTokens: Counter;
  readonly generationTokens: Counter;
  readonly requestSuccess: Counter<'finished_reason'>;
  readonly requestsAborted: Counter<'reason'>;
}

export interface LlmMetricsSources {
  readonly running: () => number;
  readonly waiting: () => number;
  /** Fraction of the KV cells (context size times sequences) holding tokens, 0..1. */
  readonly kvCacheUsage: () => number;
  /** Decode steps and the sequences they decoded, since the model was loaded (0s before). */
  readonly batching: () => { readonly steps: number; readonly sequences: number };
}

export function createLlmMetrics(kit: KitMetrics, sources: LlmMetricsSources): LlmMetrics {
  const registers = [kit.registry];
  const p = kit.prefix; // `llm_`
  new Gauge({
    name: `${p}num_requests_running`,
    help: 'Requests being generated (holding a sequence).',
    registers,
    collect() {
      this.set(sources.running());
    },
  });
  new Gauge({
    name: `${p}num_requests_waiting`,
    help: 'Requests waiting for a sequence.',
    registers,
    collect() {
      this.set(sources.waiting());
    },
  });
  new Gauge({
    name: `${p}kv_cache_usage_perc`,
    help: 'KV-cache (context) usage: 1 means every cell of every sequence holds a token.',
    registers,
    collect() {
      this.set(sources.kvCacheUsage());
    },
  });
  // Counters read from the engine at scrape time; a reloaded engine starts again from 0.
  const stepCounter = (name: string, help: string, read: () => number): void => {
    let seen = 0;
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = read();
        if (now > seen) this.inc(now - seen);
        seen = now;
      },
    });
  };
  stepCounter(
    `${p}engine_steps_total`,
    'Decode steps: each one batch in which every request in work advances by a token (or its prompt).',
    () => sources.batching().steps,
  );
  stepCounter(
    `${p}engine_step_sequences_total`,
    'Requests advanced by decode steps, summed: divided by llm_engine_steps_total, the mean batch size.',
    () => sources.batching().sequences,
  );
  const requestSuccess = new Counter({
    name: `${p}request_success_total`,
    help: 'Requests that finished, by finish reason (stop, length).',
    labelNames: ['finished_reason'] as const,
    registers,
  });
  for (const reason of ['stop', 'length'] satisfies FinishReason[])
    requestSuccess.inc({ finished_reason: reason }, 0);
  const requestsAborted = new Counter({
    name: `${p}request_aborted_total`,
    help: 'Generations stopped before they finished, by reason (client_closed, timeout, error).',
    labelNames: ['reason'] as const,
    registers,
  });
  return {
    timeToFirstToken: new Histogram({
      name: `${p}time_to_first_token_seconds`,
      help: 'Time from the request’s arrival to its first generated token, queue wait included.',
      buckets: TTFT_BUCKETS,
      registers,
    }),
    interTokenLatency: new Histogram({
      name: `${p}inter_token_latency_seconds`,
      help: 'Time between two generated tokens of one request.',
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
      help: 'Time a request waited for a slot.',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    promptTokens: new Counter({
      name: `${p}prompt_tokens_total`,
      help: 'Prompt tokens of finished and stopped requests.',
      registers,
    }),
    generationTokens: new Counter({
      name: `${p}generation_tokens_total`,
      help: 'Generated tokens.',
      registers,
    }),
    requestSuccess,
    requestsAborted,
  };
}
