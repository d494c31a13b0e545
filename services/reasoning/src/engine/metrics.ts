import type { EngineResult } from '../domain/types.js';

/**
 * Evaluation metrics over engine results with known answers, for the evaluation harness. Pure.
 *
 * A result's distribution is its ranked conditions plus the unknown mass. Rank every condition (the
 * engines' default) for exact figures: when `maxRanked` cut the list, the mass of the conditions
 * left out is lumped into one "other" class (which holds the truth if the truth was left out), so
 * the Brier score is then an upper bound and the log loss uses the lumped mass.
 */

export interface EvaluatedCase {
  readonly result: EngineResult;
  /** The true condition's id, or null for "none of the above" (a condition the base does not hold). */
  readonly truth: string | null;
}

const UNKNOWN = Symbol('unknown');
const OTHER = Symbol('other');
type Label = string | typeof UNKNOWN | typeof OTHER;

function distribution(result: EngineResult): { label: Label; p: number }[] {
  const entries: { label: Label; p: number }[] = result.ranked.map((r) => ({
    label: r.condition,
    p: r.probability,
  }));
  entries.push({ label: UNKNOWN, p: result.unknown });
  const residual = 1 - entries.reduce((s, e) => s + e.p, 0);
  if (residual > 1e-6) entries.push({ label: OTHER, p: residual });
  return entries;
}

function truthLabel(c: EvaluatedCase): Label {
  if (c.truth === null) return UNKNOWN;
  return c.result.ranked.some((r) => r.condition === c.truth) ? c.truth : OTHER;
}

function nonEmpty(cases: readonly EvaluatedCase[]): void {
  if (cases.length === 0) throw new RangeError('no cases to evaluate');
}

/** Multi-class Brier score (Brier 1950): mean over cases of Σ_k (p_k − o_k)², in [0, 2]; lower is better. */
export function brierScore(cases: readonly EvaluatedCase[]): number {
  nonEmpty(cases);
  let total = 0;
  for (const c of cases) {
    const truth = truthLabel(c);
    for (const { label, p } of distribution(c.result)) total += (p - (label === truth ? 1 : 0)) ** 2;
  }
  return total / cases.length;
}

/** Mean negative log probability of the truth (nats); probabilities are floored at 1e-15. */
export function logLoss(cases: readonly EvaluatedCase[]): number {
  nonEmpty(cases);
  let total = 0;
  for (const c of cases) {
    const truth = truthLabel(c);
    const p = distribution(c.result).find((e) => e.label === truth)?.p ?? 0;
    total -= Math.log(Math.max(p, 1e-15));
  }
  return total / cases.length;
}

export interface ReliabilityBin {
  /** Confidence interval of the bin: (lower, upper], the first bin includes 0. */
  readonly lower: number;
  readonly upper: number;
  readonly count: number;
  /** Mean top-label confidence and accuracy of the bin's cases (NaN when empty). */
  readonly confidence: number;
  readonly accuracy: number;
}

/**
 * The top-label reliability diagram: each case's prediction is its most probable hypothesis (the
 * unknown one included; ties: the ranked order, then unknown), binned by its probability.
 */
export function reliabilityDiagram(cases: readonly EvaluatedCase[], bins = 10): ReliabilityBin[] {
  if (!Number.isInteger(bins) || bins < 1)
    throw new RangeError(`bins must be a positive integer, not ${bins}`);
  const count = new Array<number>(bins).fill(0);
  const confidence = new Array<number>(bins).fill(0);
  const correct = new Array<number>(bins).fill(0);
  for (const c of cases) {
    const truth = truthLabel(c);
    let best: { label: Label; p: number } | undefined;
    for (const e of distribution(c.result)) {
      if (e.label !== OTHER && (best === undefined || e.p > best.p)) best = e;
    }
    if (best === undefined) continue;
    const bin = Math.min(bins - 1, Math.max(0, Math.ceil(best.p * bins) - 1));
    count[bin] = (count[bin] ?? 0) + 1;
    confidence[bin] = (confidence[bin] ?? 0) + best.p;
    correct[bin] = (correct[bin] ?? 0) + (best.label === truth ? 1 : 0);
  }
  return count.map((n, i) => ({
    lower: i / bins,
    upper: (i + 1) / bins,
    count: n,
    confidence: n === 0 ? Number.NaN : (confidence[i] ?? 0) / n,
    accuracy: n === 0 ? Number.NaN : (correct[i] ?? 0) / n,
  }));
}

/**
 * Expected calibration error (Guo et al. 2017, top-label, equal-width bins): Σ_b (n_b / n) ·
 * |accuracy_b − confidence_b|, in [0, 1]; lower is better.
 */
export function expectedCalibrationError(cases: readonly EvaluatedCase[], bins = 10): number {
  nonEmpty(cases);
  let total = 0;
  for (const b of reliabilityDiagram(cases, bins)) {
    if (b.count > 0) total += b.count * Math.abs(b.accuracy - b.confidence);
  }
  return total / cases.length;
}

export interface TopKOptions {
  /**
   * Rank the unknown hypothesis among the conditions, so a case whose truth is null is right when
   * "unknown" is in the top k (default false: the differential is the conditions alone, and cases
   * whose truth is null are left out).
   */
  readonly includeUnknown?: boolean;
}

/** Share of cases whose truth is among the k most probable; NaN when no case counts. */
export function topKAccuracy(cases: readonly EvaluatedCase[], k: number, options: TopKOptions = {}): number {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer, not ${k}`);
  let counted = 0;
  let hits = 0;
  for (const c of cases) {
    if (options.includeUnknown === true) {
      const order: { label: Label; p: number }[] = c.result.ranked.map((r) => ({
        label: r.condition,
        p: r.probability,
      }));
      // The unknown hypothesis goes before the first condition it beats (ties: conditions first).
      const at = order.findIndex((e) => e.p < c.result.unknown);
      order.splice(at === -1 ? order.length : at, 0, { label: UNKNOWN, p: c.result.unknown });
      counted += 1;
      const truth: Label = c.truth ?? UNKNOWN;
      if (order.slice(0, k).some((e) => e.label === truth)) hits += 1;
    } else {
      if (c.truth === null) continue;
      counted += 1;
      if (c.result.ranked.slice(0, k).some((r) => r.condition === c.truth)) hits += 1;
    }
  }
  return counted === 0 ? Number.NaN : hits / counted;
}
