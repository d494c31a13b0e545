import type { KitMetrics } from '@clinicalsuite/kit';
import { createServingMetrics, type ServingMetrics } from '@clinicalsuite/kit/llm';
import { Counter, Gauge, Histogram } from 'prom-client';

/**
 * The medical LLM's metrics, modelled on vLLM's (`vllm:` becomes `medllm_`), measured at the
 * front (so they include the image checks and the hop to llama-server), plus the images per
 * request, the backend's restarts and readiness, and the certainty guard's findings.
 */

export interface MedllmMetrics extends ServingMetrics {
  readonly imagesPerRequest: Histogram;
  readonly imagesRejected: Counter<'reason'>;
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
  const serving = createServingMetrics(kit, {
    running: sources.running,
    waiting: sources.waiting,
    help: {
      waiting: 'Requests waiting for the slot.',
      timeToFirstToken:
        'Time from the request’s arrival to its first generated token, queue, image checks and prompt processing included.',
      interTokenLatency: 'Time between two streamed pieces of one request, per token.',
      queueTime: 'Time a request waited for the slot.',
      promptTokens: 'Prompt tokens (image tokens included) as llama-server counted them.',
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
    ...serving,
    imagesPerRequest: new Histogram({
      name: `${p}request_images`,
      help: 'Images per accepted request.',
      buckets: [0, 1, 2, 3, 4, 8, 16],
      registers,
    }),
    imagesRejected,
    certaintyPhrases,
  };
}
