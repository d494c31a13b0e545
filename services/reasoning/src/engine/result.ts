import type { EngineResult, Finding, RankedCondition } from '../domain/types.js';
import { contributions } from './contributions.js';
import type { Evidence } from './evidence.js';
import { topInformationGains } from './information-gain.js';
import type { CompiledModel } from './model.js';

/** What every engine shares: its interface, options and counters, and the result assembly. */

export interface ResultOptions {
  /** How many conditions to rank (default: all, which the metrics helpers need for exact scores). */
  readonly maxRanked?: number;
  /** How many next findings to suggest (default 5). */
  readonly maxNextFindings?: number;
  /** Feature ids never to suggest as next findings (e.g. demographics one does not ask for). */
  readonly notSuggested?: ReadonlySet<string>;
}

export const DEFAULT_NEXT_FINDINGS = 5;

export interface EngineInfo {
  /** What computes the scores. */
  readonly kind: 'onnxruntime' | 'reference';
  /** `cpu`, `cuda:<id>`, or `js` for the reference engine. */
  readonly device: string;
  /** The device the configuration asked for (`auto`, `cpu`, `cuda`). */
  readonly requestedDevice: string;
  /** Why the engine is not what was asked for (CUDA unusable, onnxruntime not loadable), if so. */
  readonly fallbackReason?: string;
  readonly modelVersion: string;
  readonly fingerprint: string;
}

export interface EngineStats {
  /** Scoring runs (one `session.run` each for the ONNX engine). */
  readonly runs: number;
  /** Requests (finding lists) scored. */
  readonly requestsScored: number;
  readonly largestBatch: number;
}

export interface Engine {
  readonly info: EngineInfo;
  readonly model: CompiledModel;
  score(findings: readonly Finding[], options?: ResultOptions): Promise<EngineResult>;
  scoreBatch(batch: readonly (readonly Finding[])[], options?: ResultOptions): Promise<EngineResult[]>;
  stats(): EngineStats;
  dispose(): Promise<void>;
}

/**
 * An engine result from one row of scores: the posterior [H] (unknown last) and the gains [F].
 * Conditions are ranked by probability (ties: the base's order).
 */
export function buildResult(
  model: CompiledModel,
  evidence: Evidence,
  posterior: ArrayLike<number>,
  gains: ArrayLike<number>,
  options: ResultOptions = {},
): EngineResult {
  const C = model.conditions.length;
  const order = Array.from({ length: C }, (_, i) => i);
  order.sort((a, b) => (posterior[b] ?? 0) - (posterior[a] ?? 0) || a - b);
  const ranked: RankedCondition[] = order.slice(0, Math.max(0, options.maxRanked ?? C)).map((h) => ({
    condition: model.conditions[h] ?? '',
    probability: posterior[h] ?? 0,
    contributions: contributions(model, evidence, h),
  }));
  const exclude = [...evidence.mentioned];
  for (const id of options.notSuggested ?? []) {
    const f = model.featureIndex.get(id);
    if (f !== undefined) exclude.push(f);
  }
  return {
    ranked,
    unknown: posterior[model.unknownIndex] ?? 0,
    nextFindings: topInformationGains(
      model,
      gains,
      exclude,
      options.maxNextFindings ?? DEFAULT_NEXT_FINDINGS,
    ),
  };
}
