import type { KitMetrics } from '@clinicalsuite/kit';
import { createServingMetrics, type ServingMetrics } from '@clinicalsuite/kit/llm';
import { Counter, Gauge } from 'prom-client';

/**
 * The LLM's own metrics: the kit's serving set, modelled on vLLM's (`vllm:` becomes `llm_`), plus
 * KV-cache use and the decode batching. Requests running and waiting are also the kit's
 * `clinicalsuite_requests_running` / `_waiting` gauges (the gate is the scheduler);
 * `llm_num_requests_running` / `_waiting` repeat them under vLLM's names for stock dashboards.
 */

export type LlmMetrics = ServingMetrics;

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
  const serving = createServingMetrics(kit, {
    running: sources.running,
    waiting: sources.waiting,
    help: {
      running: 'Requests being generated (holding a sequence).',
      waiting: 'Requests waiting for a sequence.',
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
  return serving;
}
