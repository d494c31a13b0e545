import type { Evidence } from './evidence.js';
import type { CompiledModel } from './model.js';

/**
 * Why a condition ranks where it does: per reported finding, its log-likelihood ratio (natural
 * log, scaled by the calibration exponent α) for the condition against the unknown hypothesis,
 *
 *     llr(f, c) = α · [x_f (log P(f|c) − log P(f|u)) + y_f (log(1 − P(f|c)) − log(1 − P(f|u)))],
 *
 * x_f, y_f the finding's present/absent weights. Positive supports c, negative argues against it.
 * Pure.
 *
 * Against the unknown hypothesis (background rates) rather than "the rest": the reference is the
 * same for every condition, so contributions compare across conditions, and they add up exactly:
 * log(π_c / π_u) + Σ_f llr(f, c) = log(P(c | E) / P(unknown | E)). Against the rest they would
 * depend on the posterior of every other condition and would not add up.
 */
export function contributions(
  model: CompiledModel,
  evidence: Evidence,
  hypothesis: number,
): { feature: string; llr: number }[] {
  const H = model.hypotheses;
  const alpha = model.calibration.alpha;
  const out: { feature: string; llr: number; index: number }[] = [];
  for (const f of evidence.weighted) {
    const llr =
      alpha *
      ((evidence.present[f] ?? 0) * (model.llrPresent[f * H + hypothesis] ?? 0) +
        (evidence.absent[f] ?? 0) * (model.llrAbsent[f * H + hypothesis] ?? 0));
    if (llr !== 0) out.push({ feature: model.features[f] ?? '', llr, index: f });
  }
  // Strongest support first, strongest argument against last; ties in the base's feature order.
  out.sort((a, b) => b.llr - a.llr || a.index - b.index);
  return out.map(({ feature, llr }) => ({ feature, llr }));
}
