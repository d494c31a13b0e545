import { binaryEntropyBits, type CompiledModel } from './model.js';

/**
 * Which unobserved feature would best discriminate: the expected reduction of the posterior's
 * entropy (bits) if the feature were observed, present with the posterior-predictive probability
 * P(f) = Σ_h p_h P(f | h), absent otherwise. Pure.
 *
 * With the Bayesian update p_h ← p_h P(f | h) / P(f) that expectation is the mutual information
 * between the hypothesis and the feature,
 *
 *     IG(f) = H(p) − [P(f) H(p | f) + (1 − P(f)) H(p | ¬f)] = H_b(P(f)) − Σ_h p_h H_b(P(f | h)),
 *
 * which is two matrix-vector products over the [F, H] tables (P and H_b(P)) — the ONNX graph computes
 * it for every feature next to the posterior. p is the reported (calibrated) posterior; the
 * hypothetical update is the plain one (α = 1): the calibration corrects the accumulation of many
 * correlated findings, not what one more finding predicts.
 */

/** P(f) is clipped to [ε, 1 − ε] before its entropy (float32 rounding in the graph can reach 0 or 1). */
export const PREDICTIVE_CLIP = 1e-7;

/** Entropy of a distribution, bits. */
export function entropyBits(p: ArrayLike<number>): number {
  let h = 0;
  for (let i = 0; i < p.length; i++) {
    const v = p[i] ?? 0;
    if (v > 0) h -= v * Math.log2(v);
  }
  return h;
}

/** IG(f) for every feature (bits), [F]. */
export function informationGains(model: CompiledModel, posterior: ArrayLike<number>): Float64Array {
  const H = model.hypotheses;
  const F = model.features.length;
  const gains = new Float64Array(F);
  for (let f = 0; f < F; f++) {
    let pf = 0;
    let conditional = 0;
    for (let h = 0; h < H; h++) {
      const w = posterior[h] ?? 0;
      pf += w * (model.probability[f * H + h] ?? 0);
      conditional += w * (model.entropyBits[f * H + h] ?? 0);
    }
    const clipped = Math.min(1 - PREDICTIVE_CLIP, Math.max(PREDICTIVE_CLIP, pf));
    gains[f] = binaryEntropyBits(clipped) - conditional;
  }
  return gains;
}

/**
 * The definition, for one feature: H(p) minus the expected entropy after observing it (both
 * outcomes, each updated by Bayes' rule). Equal to `informationGains(...)[f]`; used to check it.
 */
export function expectedEntropyReduction(
  model: CompiledModel,
  posterior: ArrayLike<number>,
  feature: number,
): number {
  const H = model.hypotheses;
  const present = new Float64Array(H);
  const absent = new Float64Array(H);
  let pf = 0;
  for (let h = 0; h < H; h++) {
    const p = model.probability[feature * H + h] ?? 0;
    present[h] = (posterior[h] ?? 0) * p;
    absent[h] = (posterior[h] ?? 0) * (1 - p);
    pf += present[h] ?? 0;
  }
  const normalise = (v: Float64Array, z: number): Float64Array => v.map((x) => x / z);
  return (
    entropyBits(posterior) -
    pf * entropyBits(normalise(present, pf)) -
    (1 - pf) * entropyBits(normalise(absent, 1 - pf))
  );
}

/**
 * Gains below this (bits) are rounding, not information: the graph's float32 arithmetic leaves
 * ~1e-7 on a feature that discriminates nothing.
 */
export const MIN_GAIN_BITS = 1e-6;

/**
 * The best `n` features by gain, leaving out `exclude` (features already reported) and gains below
 * `MIN_GAIN_BITS` (nothing to learn). Ties: the base's feature order.
 */
export function topInformationGains(
  model: CompiledModel,
  gains: ArrayLike<number>,
  exclude: readonly number[],
  n: number,
): { feature: string; gain: number }[] {
  if (n <= 0) return [];
  const skip = new Set(exclude);
  const candidates: number[] = [];
  for (let f = 0; f < model.features.length; f++) {
    if (!skip.has(f) && (gains[f] ?? 0) >= MIN_GAIN_BITS) candidates.push(f);
  }
  candidates.sort((a, b) => (gains[b] ?? 0) - (gains[a] ?? 0) || a - b);
  return candidates.slice(0, n).map((f) => ({ feature: model.features[f] ?? '', gain: gains[f] ?? 0 }));
}
