import type { EngineResult, Finding } from '../domain/types.js';
import { encodeFindings, type Evidence } from './evidence.js';
import { informationGains } from './information-gain.js';
import type { CompiledModel } from './model.js';
import { buildResult, type Engine, type EngineInfo, type EngineStats, type ResultOptions } from './result.js';

/**
 * The scoring math in plain TypeScript (float64): what the ONNX graph computes, written out. Tests
 * check the graph against it; it is also the engine of last resort when onnxruntime cannot load
 * (`loadEngine` reports that as `kind: 'reference'` with the reason). Pure.
 */

/** Uncalibrated log-likelihood ratios against the unknown hypothesis, [H] (unknown's is 0). */
export function logLikelihoodRatios(model: CompiledModel, evidence: Evidence): Float64Array {
  const H = model.hypotheses;
  const llr = new Float64Array(H);
  for (const f of evidence.weighted) {
    const x = evidence.present[f] ?? 0;
    const y = evidence.absent[f] ?? 0;
    for (let h = 0; h < H; h++) {
      llr[h] = (llr[h] ?? 0) + x * (model.llrPresent[f * H + h] ?? 0) + y * (model.llrAbsent[f * H + h] ?? 0);
    }
  }
  return llr;
}

/** softmax(log π + α · llr), [H]: the posterior with the unknown mass last. */
export function posteriorFromLlr(
  model: CompiledModel,
  llr: ArrayLike<number>,
  alpha: number = model.calibration.alpha,
): Float64Array {
  const H = model.hypotheses;
  const logits = new Float64Array(H);
  let max = -Infinity;
  for (let h = 0; h < H; h++) {
    logits[h] = (model.logPrior[h] ?? 0) + alpha * (llr[h] ?? 0);
    max = Math.max(max, logits[h] ?? 0);
  }
  let z = 0;
  for (let h = 0; h < H; h++) {
    logits[h] = Math.exp((logits[h] ?? 0) - max);
    z += logits[h] ?? 0;
  }
  return logits.map((v) => v / z);
}

export interface Scores {
  /** Uncalibrated log-likelihood ratios vs unknown, [H]. */
  readonly llr: Float64Array;
  /** Calibrated posterior, [H], unknown last. */
  readonly posterior: Float64Array;
  /** Expected information gain of every feature, bits, [F]. */
  readonly gains: Float64Array;
}

export function scoreEvidence(model: CompiledModel, evidence: Evidence): Scores {
  const llr = logLikelihoodRatios(model, evidence);
  const posterior = posteriorFromLlr(model, llr);
  return { llr, posterior, gains: informationGains(model, posterior) };
}

export interface ReferenceEngineOptions extends ResultOptions {
  /** Recorded in `info` when this engine stands in for the ONNX one. */
  readonly fallbackReason?: string;
  readonly requestedDevice?: string;
}

/** The `Engine` on the reference math: synchronous work behind the async interface. */
export class ReferenceEngine implements Engine {
  readonly info: EngineInfo;
  #runs = 0;
  #requests = 0;
  #largest = 0;

  constructor(
    readonly model: CompiledModel,
    private readonly options: ReferenceEngineOptions = {},
  ) {
    this.info = {
      kind: 'reference',
      device: 'js',
      requestedDevice: options.requestedDevice ?? 'js',
      ...(options.fallbackReason === undefined ? {} : { fallbackReason: options.fallbackReason }),
      modelVersion: model.version,
      fingerprint: model.fingerprint,
    };
  }

  score(findings: readonly Finding[], options?: ResultOptions): Promise<EngineResult> {
    return this.scoreBatch([findings], options).then((r) => r[0] as EngineResult);
  }

  scoreBatch(batch: readonly (readonly Finding[])[], options?: ResultOptions): Promise<EngineResult[]> {
    try {
      const evidence = batch.map((findings) => encodeFindings(this.model, findings));
      const results = evidence.map((e) => {
        const s = scoreEvidence(this.model, e);
        return buildResult(this.model, e, s.posterior, s.gains, { ...this.options, ...options });
      });
      this.#runs += 1;
      this.#requests += batch.length;
      this.#largest = Math.max(this.#largest, batch.length);
      return Promise.resolve(results);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  stats(): EngineStats {
    return { runs: this.#runs, requestsScored: this.#requests, largestBatch: this.#largest };
  }

  dispose(): Promise<void> {
    return Promise.resolve();
  }
}
