import type { KitMetrics } from '@clinicalsuite/kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { EngineStats } from './engine/index.js';

/**
 * The reasoning engine's own metrics (`reasoning_` prefix). Labels come from fixed sets (layers,
 * stages, reasons, outcomes): never a condition, a feature or any text.
 */

export const LAYERS = ['understanding', 'normalisation', 'inference', 'presentation', 'total'] as const;
export const STAGES = [
  'extract_rules',
  'extract_llm',
  'code_lookup',
  'clinical_map',
  'engine',
  'result',
] as const;
export const EXTRACTOR_FAILURE_REASONS = [
  'unreachable',
  'timeout',
  'upstream_error',
  'invalid_reply',
] as const;
export type ExtractorFailureReason = (typeof EXTRACTOR_FAILURE_REASONS)[number];

export interface ReasoningMetrics {
  readonly layerDuration: Histogram<'layer'>;
  readonly stageDuration: Histogram<'stage'>;
  readonly batchSize: Histogram;
  readonly engineRunDuration: Histogram;
  readonly topProbability: Histogram;
  readonly extractorFailures: Counter<'reason'>;
  readonly codeLookupFailures: Counter;
  readonly diagnoses: Counter<'outcome'>;
}

const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What the engine counts and times: layers, stages, batches, diagnoses, failures. */
export function createReasoningMetrics(kit: KitMetrics): ReasoningMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  const layerDuration = new Histogram({
    name: `${p}layer_duration_seconds`,
    help: 'Time a diagnosis request spent in each layer (understanding, normalisation, inference, presentation, total).',
    labelNames: ['layer'],
    buckets: SECONDS,
    registers,
  });
  const stageDuration = new Histogram({
    name: `${p}stage_duration_seconds`,
    help: 'Time in each stage of the chain (extract_rules, extract_llm, code_lookup, clinical_map, engine, result).',
    labelNames: ['stage'],
    buckets: SECONDS,
    registers,
  });
  const batchSize = new Histogram({
    name: `${p}engine_batch_size`,
    help: 'Requests scored together in one engine run (micro-batching).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers,
  });
  const engineRunDuration = new Histogram({
    name: `${p}engine_run_duration_seconds`,
    help: 'Duration of one engine run (a batch).',
    buckets: SECONDS,
    registers,
  });
  const topProbability = new Histogram({
    name: `${p}top_diagnosis_probability`,
    help: 'Calibrated probability of the first-ranked diagnosis.',
    buckets: [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99],
    registers,
  });
  const extractorFailures = new Counter({
    name: `${p}extractor_failures_total`,
    help: 'LLM extractor failures by reason (unreachable, timeout, upstream_error, invalid_reply).',
    labelNames: ['reason'],
    registers,
  });
  const codeLookupFailures = new Counter({
    name: `${p}code_lookup_failures_total`,
    help: 'Requests whose code lookup failed (code search unreachable or erroring: a warning, not a failure).',
    registers,
  });
  const diagnoses = new Counter({
    name: `${p}diagnoses_total`,
    help: 'Diagnosis requests by outcome (ok, invalid, extractor_failed, not_ready, error).',
    labelNames: ['outcome'],
    registers,
  });
  for (const reason of EXTRACTOR_FAILURE_REASONS) extractorFailures.inc({ reason }, 0);
  return {
    layerDuration,
    stageDuration,
    batchSize,
    engineRunDuration,
    topProbability,
    extractorFailures,
    codeLookupFailures,
    diagnoses,
  };
}

/**
 * What the engine holds, read at each scrape: its runs and the requests it scored (once the
 * pipeline is loaded), and whether the service is ready.
 */
export function registerReasoningGauges(
  kit: KitMetrics,
  parts: {
    pipeline: { readonly value: { readonly engine: { stats(): EngineStats } } | undefined };
    readiness: { readonly ready: boolean };
  },
): void {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}engine_runs`,
    help: 'Engine runs (batches) since start.',
    registers,
    collect() {
      this.set(parts.pipeline.value?.engine.stats().runs ?? 0);
    },
  });
  new Gauge({
    name: `${p}engine_requests_scored`,
    help: 'Finding lists scored by the engine since start.',
    registers,
    collect() {
      this.set(parts.pipeline.value?.engine.stats().requestsScored ?? 0);
    },
  });
  new Gauge({
    name: `${p}knowledge_ready`,
    help: '1 when a knowledge base with scorable conditions is loaded and the engine is up, else 0.',
    registers,
    collect() {
      this.set(parts.readiness.ready ? 1 : 0);
    },
  });
}
