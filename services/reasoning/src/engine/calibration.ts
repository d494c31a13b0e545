import { z } from 'zod';
import type { Finding } from '../domain/types.js';
import { encodeFindings } from './evidence.js';
import type { Calibration, CompiledModel } from './model.js';
import { logLikelihoodRatios } from './reference.js';

/**
 * Fitting the calibration exponent: posterior ∝ π_h · L_h^α, α chosen to minimise the mean log
 * loss (negative log posterior of the true hypothesis) on labelled cases. Pure.
 *
 * As a function of α the loss is a log-sum-exp of affine functions minus an affine one, so it is
 * convex: its derivative is E_p[b] − b_y and its second derivative Var_p[b] ≥ 0 (b the cases'
 * log-likelihood ratios), and a safeguarded Newton search (bisection when a step leaves the
 * bracket) finds the minimum in a handful of steps. A case whose true condition is not in the base
 * has `truth: null` and counts as the unknown hypothesis.
 */

/**
 * A calibration as stored (JSON, next to the knowledge base it was fitted for): parse it with this
 * at load; `compileModel` refuses one whose kbId/kbVersion are not the base's.
 */
export const calibrationSchema = z
  .object({
    method: z.literal('likelihood-power'),
    alpha: z.number().positive(),
    kbId: z.string().min(1),
    kbVersion: z.string().min(1),
    fit: z
      .object({
        cases: z.number().int().positive(),
        logLossBefore: z.number(),
        logLossAfter: z.number(),
        iterations: z.number().int().nonnegative(),
        atBound: z.boolean(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** A stored calibration, validated (throws zod's error naming the bad fields). */
export function parseCalibration(json: unknown): Calibration {
  const parsed = calibrationSchema.parse(json);
  const { fit, ...rest } = parsed;
  return fit === undefined ? rest : { ...rest, fit };
}

export interface LabelledCase {
  readonly findings: readonly Finding[];
  /** The true condition's id, or null for a condition the base does not hold. */
  readonly truth: string | null;
}

export interface FitOptions {
  /** The search interval for α (default [0.01, 10]). */
  readonly lower?: number;
  readonly upper?: number;
  /** Stop when |dLoss/dα| or the step is below this (default 1e-10). */
  readonly tolerance?: number;
  readonly maxIterations?: number;
}

interface Prepared {
  readonly llr: Float64Array;
  readonly truth: number;
}

function prepare(model: CompiledModel, cases: readonly LabelledCase[]): Prepared[] {
  return cases.map((c, i) => {
    const truth = c.truth === null ? model.unknownIndex : model.conditionIndex.get(c.truth);
    if (truth === undefined) {
      throw new RangeError(
        `case ${i}: condition ${JSON.stringify(c.truth)} is not in ${model.kbId}@${model.kbVersion}`,
      );
    }
    return { llr: logLikelihoodRatios(model, encodeFindings(model, c.findings)), truth };
  });
}

/** Mean log loss (nats), and its first and second derivatives in α. */
function lossAt(model: CompiledModel, data: readonly Prepared[], alpha: number): [number, number, number] {
  const H = model.hypotheses;
  const logits = new Float64Array(H);
  let loss = 0;
  let d1 = 0;
  let d2 = 0;
  for (const { llr, truth } of data) {
    let max = -Infinity;
    for (let h = 0; h < H; h++) {
      logits[h] = (model.logPrior[h] ?? 0) + alpha * (llr[h] ?? 0);
      max = Math.max(max, logits[h] ?? 0);
    }
    let z = 0;
    let mean = 0;
    let square = 0;
    for (let h = 0; h < H; h++) {
      const w = Math.exp((logits[h] ?? 0) - max);
      const b = llr[h] ?? 0;
      z += w;
      mean += w * b;
      square += w * b * b;
    }
    mean /= z;
    square /= z;
    loss += max + Math.log(z) - (logits[truth] ?? 0);
    d1 += mean - (llr[truth] ?? 0);
    d2 += square - mean * mean;
  }
  const n = data.length;
  return [loss / n, d1 / n, Math.max(0, d2 / n)];
}

/** Mean log loss (nats) of the model on labelled cases at a given α (default: the model's). */
export function meanLogLoss(
  model: CompiledModel,
  cases: readonly LabelledCase[],
  alpha: number = model.calibration.alpha,
): number {
  return lossAt(model, prepare(model, cases), alpha)[0];
}

/** Fits α on labelled cases; the result is tied to the model's knowledge base id and version. */
export function fitCalibration(
  model: CompiledModel,
  cases: readonly LabelledCase[],
  options: FitOptions = {},
): Calibration {
  if (cases.length === 0) throw new RangeError('fitting a calibration needs at least one labelled case');
  const data = prepare(model, cases);
  let lo = options.lower ?? 0.01;
  let hi = options.upper ?? 10;
  if (!(lo > 0 && hi > lo)) throw new RangeError(`bad search interval [${lo}, ${hi}] for α`);
  const tolerance = options.tolerance ?? 1e-10;
  const maxIterations = options.maxIterations ?? 100;

  let alpha: number;
  let iterations = 0;
  let atBound = false;
  if (lossAt(model, data, lo)[1] >= 0) {
    alpha = lo;
    atBound = true;
  } else if (lossAt(model, data, hi)[1] <= 0) {
    alpha = hi;
    atBound = true;
  } else {
    alpha = Math.min(hi, Math.max(lo, 1));
    while (iterations < maxIterations) {
      iterations += 1;
      const [, g, h] = lossAt(model, data, alpha);
      if (Math.abs(g) < tolerance) break;
      if (g > 0) hi = alpha;
      else lo = alpha;
      let next = h > 0 ? alpha - g / h : Number.NaN;
      if (!(next > lo && next < hi)) next = (lo + hi) / 2;
      const step = Math.abs(next - alpha);
      alpha = next;
      if (step < tolerance * Math.max(1, alpha)) break;
    }
  }
  return {
    method: 'likelihood-power',
    alpha,
    kbId: model.kbId,
    kbVersion: model.kbVersion,
    fit: {
      cases: cases.length,
      logLossBefore: lossAt(model, data, 1)[0],
      logLossAfter: lossAt(model, data, alpha)[0],
      iterations,
      atBound,
    },
  };
}
