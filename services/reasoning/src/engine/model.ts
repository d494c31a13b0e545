import { createHash } from 'node:crypto';
import type { KnowledgeBase } from '../domain/types.js';
import { ModelError, type ModelIssue } from './errors.js';

/**
 * The scoring model, compiled from a knowledge base into dense tables. Pure: no I/O, no clock.
 *
 * ## The model
 *
 * Hypotheses are single conditions, mutually exclusive: the C conditions of the base and one more,
 * "unknown" (a condition the base does not hold), H = C + 1, unknown last. Given a hypothesis the
 * features are independent (naive Bayes):
 *
 *     P(h | E) ∝ π_h · Π_f P(e_f | h)
 *
 * - P(f | c) is the base's link probability for a linked pair, and the leak (the feature's own
 *   `leak.perFeature` value, else `leak.default`) for an unlinked one: a feature the base does not
 *   tie to a condition still turns up in it at the background rate.
 * - A link with a specificity (a diagnostic-accuracy study's P(f absent | c absent)) is scored by
 *   the study's own likelihood ratios: sens / (1 − spec) present, (1 − sens) / spec absent, in
 *   place of sens / leak and (1 − sens) / (1 − leak). Every score is then a prior times one
 *   likelihood ratio per finding, each taken against the rest of the patients (one-vs-rest), and
 *   the softmax over the conditions and "unknown" (whose ratios are all 1) makes them one
 *   distribution (docs/knowledge-base.md, "The model").
 * - P(f | unknown) is the leak for every feature: an unlisted condition is modelled as background.
 * - π_c is the base's prior; π_unknown = 1 − Σ π_c, which must be > 0 (a base whose priors sum to 1
 *   or more leaves no room for "none of the above" and is refused).
 * - A link probability is used as P(f | c) as is, not combined noisy-OR style with the leak
 *   (1 − (1 − p)(1 − leak)): a frequency such as HPO's is the share of patients with the condition
 *   who show the feature, background causes included.
 *
 * Why naive Bayes over single conditions rather than a noisy-OR network over several (QMR-DT):
 * posteriors over mutually exclusive hypotheses are what the contract reports (a ranking whose
 * probabilities and the unknown mass sum to 1); exact scoring is one matrix product per batch, so it
 * runs as an ONNX graph on CPU or GPU; and a multiple-condition noisy-OR needs Quickscore, exponential
 * in the number of present findings, or approximate inference, and gives marginals that do not sum
 * to 1. Its weakness, overconfidence when findings are correlated (double counting), is what the
 * calibration exponent below corrects.
 *
 * ## Evidence
 *
 * A finding is a weight on the feature's present or absent log-likelihood: "present with certainty
 * q" adds q · log P(f | h), "absent with certainty q" adds q · log(1 − P(f | h)); a feature not
 * reported adds nothing. At q = 1 this is plain naive Bayes; below 1 it is the likelihood raised to
 * the power q (a weighted or fractional observation, as with fractional counts), which moves the
 * posterior monotonically from no evidence (q = 0) to full evidence (q = 1). The alternative, Pearl's
 * virtual evidence (P(report | h) = q·P(f|h) + (1 − q)·P(¬f|h)), reads q as a probability that the
 * feature is present, so q = 0.5 would be no evidence and q < 0.5 evidence for the opposite; the
 * contract's certainty is a strength of the statement ("1 = stated; below 1 = uncertain"), which the
 * power form matches, and the power form keeps scoring linear in the evidence (one MatMul). See
 * `encodeFindings` for duplicate findings.
 *
 * ## Calibration
 *
 * posterior ∝ π_h · L_h^α: the log-likelihoods are scaled by α (fitted by `fitCalibration`, stored
 * with the base's id and version). α < 1 softens naive Bayes' overconfidence; α = 1 is the raw model.
 *
 * ## Tables
 *
 * Row-major [F, H] (feature-major, so a [batch, F] evidence matrix times a table is [batch, H]).
 * The scoring tables are log-likelihood ratios against the unknown hypothesis (its column is 0):
 * constants common to every hypothesis cancel in the softmax, the numbers stay small (exactly 0 for
 * an unlinked pair with the feature's own leak), and they are the per-finding contributions.
 */

export interface CalibrationFit {
  /** Labelled cases the exponent was fitted on. */
  readonly cases: number;
  /** Mean log loss (nats) at α = 1 and at the fitted α. */
  readonly logLossBefore: number;
  readonly logLossAfter: number;
  readonly iterations: number;
  /** The search stopped at a bound of its interval (the optimum may lie beyond it). */
  readonly atBound: boolean;
}

/** The calibration exponent, tied to the knowledge base (id and version) it was fitted for. */
export interface Calibration {
  readonly method: 'likelihood-power';
  readonly alpha: number;
  readonly kbId: string;
  readonly kbVersion: string;
  /** Absent for an exponent not fitted here (the identity, α = 1). */
  readonly fit?: CalibrationFit;
}

export interface CompiledModel {
  readonly kbId: string;
  readonly kbVersion: string;
  /** `<kb id>@<kb version>+nb-leak+alpha=<α>` for results and logs. */
  readonly version: string;
  /** sha256 (hex, 16 chars) of the tables and α: changes whenever a score could. */
  readonly fingerprint: string;
  /** Condition ids, in the base's order (hypothesis i < C). */
  readonly conditions: readonly string[];
  /** Feature ids, in the base's order. */
  readonly features: readonly string[];
  readonly conditionIndex: ReadonlyMap<string, number>;
  readonly featureIndex: ReadonlyMap<string, number>;
  /** H = C + 1; the unknown hypothesis is index C. */
  readonly hypotheses: number;
  readonly unknownIndex: number;
  /** P(f | h), [F, H]. */
  readonly probability: Float64Array;
  /** log P(f | h) − log P(f | unknown) and the same for absence, [F, H]; column C is 0. */
  readonly llrPresent: Float64Array;
  readonly llrAbsent: Float64Array;
  /** Binary entropy of P(f | h) in bits, [F, H] (for information gain). */
  readonly entropyBits: Float64Array;
  /** log π_h, [H]. */
  readonly logPrior: Float64Array;
  readonly calibration: Calibration;
}

export const MODEL_KIND = 'nb-leak';

/** α = 1: the raw model, for a base with no fitted calibration. */
export function identityCalibration(kb: Pick<KnowledgeBase, 'id' | 'version'>): Calibration {
  return { method: 'likelihood-power', alpha: 1, kbId: kb.id, kbVersion: kb.version };
}

const inOpenUnit = (p: number): boolean => Number.isFinite(p) && p > 0 && p < 1;

/** Binary entropy in bits. */
export function binaryEntropyBits(p: number): number {
  if (p <= 0 || p >= 1) return 0;
  return -(p * Math.log2(p) + (1 - p) * Math.log2(1 - p));
}

/**
 * Compiles a knowledge base (validated here for what the model needs: ids unique and known, every
 * probability in (0, 1), priors leaving room for the unknown hypothesis, sources cited) with a
 * calibration (default: the identity). Throws `ModelError` listing every problem found.
 */
export function compileModel(kb: KnowledgeBase, calibration?: Calibration): CompiledModel {
  const issues: ModelIssue[] = [];
  const issue = (path: string, message: string): void => {
    issues.push({ path, message });
  };
  const sources = new Set(kb.sources.map((s) => s.id));
  const cited = (path: string, id: string | undefined): void => {
    if (id === undefined || !sources.has(id))
      issue(path, `cites source ${JSON.stringify(id)}, which the base does not list`);
  };

  if (kb.conditions.length === 0) issue('conditions', 'the base has no conditions');
  const conditionIndex = new Map<string, number>();
  let priorSum = 0;
  kb.conditions.forEach((c, i) => {
    if (conditionIndex.has(c.id))
      issue(`conditions[${i}].id`, `duplicate condition id ${JSON.stringify(c.id)}`);
    else conditionIndex.set(c.id, i);
    if (!inOpenUnit(c.prior)) issue(`conditions[${i}].prior`, `prior ${c.prior} of ${c.id} is not in (0, 1)`);
    else priorSum += c.prior;
    cited(`conditions[${i}].prior_source`, c.prior_source);
  });
  const unknownPrior = 1 - priorSum;
  if (!(unknownPrior > 0)) {
    issue(
      'conditions',
      `the priors sum to ${priorSum}, leaving no mass for "none of the above" (they must sum to less than 1)`,
    );
  }

  const featureIndex = new Map<string, number>();
  kb.features.forEach((f, i) => {
    if (featureIndex.has(f.id)) issue(`features[${i}].id`, `duplicate feature id ${JSON.stringify(f.id)}`);
    else featureIndex.set(f.id, i);
  });

  if (!inOpenUnit(kb.leak.default)) issue('leak.default', `leak ${kb.leak.default} is not in (0, 1)`);
  cited('leak.source', kb.leak.source);
  for (const [id, p] of Object.entries(kb.leak.perFeature ?? {})) {
    if (!featureIndex.has(id)) issue(`leak.perFeature.${id}`, `unknown feature id ${JSON.stringify(id)}`);
    if (!inOpenUnit(p)) issue(`leak.perFeature.${id}`, `leak ${p} is not in (0, 1)`);
  }

  const linked = new Map<number, number>(); // fi * H + ci → P(f | c)
  const reference = new Map<number, number>(); // fi * H + ci → P(f | not c) where the link gives it
  const H = kb.conditions.length + 1;
  kb.links.forEach((l, i) => {
    const ci = conditionIndex.get(l.condition);
    const fi = featureIndex.get(l.feature);
    if (ci === undefined)
      issue(`links[${i}].condition`, `unknown condition id ${JSON.stringify(l.condition)}`);
    if (fi === undefined) issue(`links[${i}].feature`, `unknown feature id ${JSON.stringify(l.feature)}`);
    if (!inOpenUnit(l.probability)) {
      issue(
        `links[${i}].probability`,
        `P(${l.feature} | ${l.condition}) = ${l.probability} is not in (0, 1)`,
      );
    }
    cited(`links[${i}].source`, l.source);
    if (ci === undefined || fi === undefined) return;
    const key = fi * H + ci;
    if (linked.has(key)) issue(`links[${i}]`, `duplicate link ${l.condition} → ${l.feature}`);
    else linked.set(key, l.probability);
    if (l.specificity !== undefined) {
      if (!inOpenUnit(l.specificity))
        issue(`links[${i}].specificity`, `specificity ${l.specificity} is not in (0, 1)`);
      else reference.set(key, 1 - l.specificity);
    }
  });

  const cal = calibration ?? identityCalibration(kb);
  if (!(Number.isFinite(cal.alpha) && cal.alpha > 0))
    issue('calibration.alpha', `α = ${cal.alpha} is not > 0`);
  if (cal.kbId !== kb.id || cal.kbVersion !== kb.version) {
    issue(
      'calibration',
      `the calibration was fitted for ${cal.kbId}@${cal.kbVersion}, not ${kb.id}@${kb.version}`,
    );
  }

  if (issues.length > 0) throw new ModelError(`knowledge base ${kb.id}@${kb.version}`, issues);

  const conditions = kb.conditions.map((c) => c.id);
  const features = kb.features.map((f) => f.id);
  const C = conditions.length;
  const F = features.length;
  const probability = new Float64Array(F * H);
  const perFeature = kb.leak.perFeature ?? {};
  kb.features.forEach((f, fi) => {
    const leak = Object.hasOwn(perFeature, f.id) ? (perFeature[f.id] ?? kb.leak.default) : kb.leak.default;
    probability.fill(leak, fi * H, (fi + 1) * H);
  });
  for (const [key, p] of linked) probability[key] = p;

  // Log-likelihood ratios against the unknown hypothesis, cell by cell: the log tables themselves are
  // not kept (two more [F, H] float64 tables, 2.3 GB for a base merged with the whole HPO import).
  const llrPresent = new Float64Array(F * H);
  const llrAbsent = new Float64Array(F * H);
  for (let fi = 0; fi < F; fi++) {
    const pu = probability[fi * H + C] ?? 0;
    const logPu = Math.log(pu);
    const logQu = Math.log1p(-pu);
    for (let h = 0; h < C; h++) {
      const p = probability[fi * H + h] ?? 0;
      const ref = reference.get(fi * H + h);
      llrPresent[fi * H + h] = Math.log(p) - (ref === undefined ? logPu : Math.log(ref));
      llrAbsent[fi * H + h] = Math.log1p(-p) - (ref === undefined ? logQu : Math.log1p(-ref));
    }
  }
  const entropyBits = probability.map(binaryEntropyBits);
  const logPrior = new Float64Array(H);
  kb.conditions.forEach((c, i) => (logPrior[i] = Math.log(c.prior)));
  logPrior[C] = Math.log(unknownPrior);

  return {
    kbId: kb.id,
    kbVersion: kb.version,
    version: `${kb.id}@${kb.version}+${MODEL_KIND}+alpha=${cal.alpha}`,
    fingerprint: fingerprint(conditions, features, [probability, llrPresent, logPrior], cal.alpha),
    conditions,
    features,
    conditionIndex,
    featureIndex,
    hypotheses: H,
    unknownIndex: C,
    probability,
    llrPresent,
    llrAbsent,
    entropyBits,
    logPrior,
    calibration: cal,
  };
}

/** The same model with another calibration for the same base (the tables are shared, not copied). */
export function withCalibration(model: CompiledModel, calibration: Calibration): CompiledModel {
  const issues: ModelIssue[] = [];
  if (!(Number.isFinite(calibration.alpha) && calibration.alpha > 0)) {
    issues.push({ path: 'calibration.alpha', message: `α = ${calibration.alpha} is not > 0` });
  }
  if (calibration.kbId !== model.kbId || calibration.kbVersion !== model.kbVersion) {
    issues.push({
      path: 'calibration',
      message: `the calibration was fitted for ${calibration.kbId}@${calibration.kbVersion}, not ${model.kbId}@${model.kbVersion}`,
    });
  }
  if (issues.length > 0) throw new ModelError(`knowledge base ${model.kbId}@${model.kbVersion}`, issues);
  return {
    ...model,
    version: `${model.kbId}@${model.kbVersion}+${MODEL_KIND}+alpha=${calibration.alpha}`,
    fingerprint: fingerprint(
      model.conditions,
      model.features,
      [model.probability, model.llrPresent, model.logPrior],
      calibration.alpha,
    ),
    calibration,
  };
}

function fingerprint(
  conditions: readonly string[],
  features: readonly string[],
  tables: readonly Float64Array[],
  alpha: number,
): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([conditions, features]));
  for (const t of tables) {
    hash.update(new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
  }
  hash.update(new Uint8Array(Float64Array.of(alpha).buffer));
  return hash.digest('hex').slice(0, 16);
}
