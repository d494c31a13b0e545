import type { FieldIssue } from '@clinicalsuite/kit';
import type { Finding } from '../domain/types.js';
import { FindingsError } from './errors.js';
import type { CompiledModel } from './model.js';

/**
 * Findings as the model's evidence vectors: per feature a weight on its present log-likelihood and
 * one on its absent log-likelihood (see model.ts, "Evidence"). Pure.
 */
export interface Evidence {
  /** [F]: the certainty of a "present" finding, else 0. */
  readonly present: Float64Array;
  /** [F]: the certainty of an "absent" finding, else 0. */
  readonly absent: Float64Array;
  /** Feature indices with a non-zero weight, ascending. */
  readonly weighted: readonly number[];
  /** Every feature index a finding named (weight 0 included), ascending: not suggested as next. */
  readonly mentioned: readonly number[];
}

/**
 * Validates and encodes findings. Every problem is reported at once as a `FindingsError` (422):
 * a feature id the model does not hold, a certainty that is not a number in [0, 1].
 *
 * Several findings about one feature (the extractor saw "sốt" twice, or "fever" and "no fever")
 * are one observation, not several: the most certain one counts; two of equal certainty that
 * disagree cancel (the feature counts as mentioned, with no evidence either way).
 */
export function encodeFindings(model: CompiledModel, findings: readonly Finding[]): Evidence {
  const issues: FieldIssue[] = [];
  const F = model.features.length;
  const present = new Float64Array(F);
  const absent = new Float64Array(F);
  const mentioned = new Set<number>();
  findings.forEach((finding, i) => {
    const fi = model.featureIndex.get(finding.feature);
    if (fi === undefined) {
      issues.push({
        loc: ['findings', i, 'feature'],
        msg: `unknown feature ${JSON.stringify(finding.feature)} (not in knowledge base ${model.kbId}@${model.kbVersion})`,
        type: 'value_error.unknown_feature',
      });
    }
    const q = finding.certainty;
    if (typeof q !== 'number' || !Number.isFinite(q) || q < 0 || q > 1) {
      issues.push({
        loc: ['findings', i, 'certainty'],
        msg: 'certainty must be a number in [0, 1]',
        type: 'value_error.certainty',
      });
      return;
    }
    if (fi === undefined) return;
    mentioned.add(fi);
    const side = finding.present ? present : absent;
    side[fi] = Math.max(side[fi] ?? 0, q);
  });
  if (issues.length > 0) throw new FindingsError(issues);
  // Per feature, the most certain side wins; a tie cancels. Order-independent.
  const weighted: number[] = [];
  for (const f of mentioned) {
    const p = present[f] ?? 0;
    const a = absent[f] ?? 0;
    if (p > a) absent[f] = 0;
    else if (a > p) present[f] = 0;
    else present[f] = absent[f] = 0;
    if ((present[f] ?? 0) > 0 || (absent[f] ?? 0) > 0) weighted.push(f);
  }
  weighted.sort((x, y) => x - y);
  return { present, absent, weighted, mentioned: [...mentioned].sort((a, b) => a - b) };
}
