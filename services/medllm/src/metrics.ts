import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';

/**
 * The medical LLM's metrics, modelled on vLLM's (`vllm:` becomes `medllm_`), measured at the
 * front (so they include the image checks and the hop to llama-server), plus the images per
 * request, the backend's restarts and readiness, and the certainty guard's findings.
 */

const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const LATENCY_BUCKETS = [
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920,
];

export interface MedllmMetrics {
  readonly timeToFirstToken: Histogram;
  readonly interTokenLatency: Histogram;
  readonly e2eLatency: Histogram;
  readonly queueTime: Histogram;
  readonly promptTokens: Counter;
  readonly generationTokens: Counter;
  readonly imagesPerRequest: Histogram;
  readonly imagesRejected: Counter<'reason'>;
  readonly requestSuccess: Counter<'finished_reason'>;
  readonly requestsAborted: Counter<'reason'>;
  readonly certaintyPhrases: Counter<'action'>;
}

export interface MedllmMetricsSources {
  readonly running: () => number;
  readonly waiting: () => number;
  readonly backendReady: () => boolean;
  readonly backendRestarts: () => number;
}

export function createMedllmMetrics(kit: KitMetrics, sources: MedllmMetricsSources): MedllmMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}num_requests_running`,
    help: 'Requests being generated.',
    registers,
    collect() {
      this.set(sources.running());
    },
  });
  new Gauge({
    name: `${p}num_requests_waiting`,
    help: 'Requests waiting for the slot.',
    registers,
    collect() {
      this.set(sources.waiting());
    },
  });
  new Gauge({
    name: `${p}backend_up`,
    help: '1 while llama-server answers /health, 0 otherwise.',
    registers,
    collect() {
      this.set(sources.backendReady() ? 1 : 0);
    },
  });
  let seenRestarts = 0;
  new Counter({
    name: `${p}backend_restarts_total`,
    help: 'Times llama-server was started again after it exited or stopped answering.',
    registers,
    collect() {
      const now = sources.backendRestarts();
      if (now > seenRestarts) this.inc(now - seenRestarts);
      seenRestarts = now;
    },
  });
  const requestSuccess = new Counter({
    name: `${p}request_success_total`,
    help: 'Requests that finished, by finish reason (stop, length).',
    labelNames: ['finished_reason'] as const,
    registers,
  });
  for (const reason of ['stop', 'length']) requestSuccess.inc({ finished_reason: reason }, 0);
  const requestsAborted = new Counter({
    name: `${p}request_aborted_total`,
    help: 'Generations stopped before they finished, by reason (client_closed, timeout, error).',
    labelNames: ['reason'] as const,
    registers,
  });
  const imagesRejected = new Counter({
    name: `${p}images_rejected_total`,
    help: 'Requests refused for an image, by reason (the 400 error code).',
    labelNames: ['reason'] as const,
    registers,
  });
  const certaintyPhrases = new Counter({
    name: `${p}certainty_phrases_total`,
    help: 'Unhedged certainty phrases found in replies, by action (rewritten, flagged).',
    labelNames: ['action'] as const,
    registers,
  });
  for (const action of ['rewritten', 'flagged']) certaintyPhrases.inc({ action }, 0);
  return {
    timeToFirstToken: new Histogram({
      name: `${p}time_to_first_token_seconds`,
      help: 'Time from the request’s arrival to its first generated token, queue, image checks and prompt processing included.',
      buckets: TTFT_BUCKETS,
      registers,
    }),
    interTokenLatency: new Histogram({
      name: `${p}inter_token_latency_seconds`,
      help: 'Time between two streamed pieces of one request, per token.',
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
      help: 'Time a request waited for the slot.',
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    promptTokens: new Counter({
      name: `${p}prompt_tokens_total`,
      help: 'Prompt tokens (image tokens included) as llama-server counted them.',
      registers,
    }),
    generationTokens: new Counter({
      name: `${p}generation_tokens_total`,
      help: 'Generated tokens.',
      registers,
    }),
    imagesPerRequest: new Histogram({
      name: `${p}request_images`,
      help: 'Images per accepted request.',
      buckets: [0, 1, 2, 3, 4, 8, 16],
      registers,
    }),
    imagesRejected,
    requestSuccess,
    requestsAborted,
    certaintyPhrases,
  };
}
