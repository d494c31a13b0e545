// The calibration tool's pure parts (calibrate.js runs them on the service's findings): labelled
// cases from the harness's responses, folds fixed by a hash of the case id, K-fold cross-validation
// of the engine's calibration exponent α (posterior ∝ π · L^α, engine/calibration.ts) with held-out
// log loss, Brier score, expected calibration error and top-1 before (α = 1) and after the fit, and
// the report. Plain ESM JavaScript with JSDoc (calibrate-lib.d.ts carries the types for the tests).
//
// Every computation goes through the engine's own functions, passed in as `engine` (calibrate.js
// passes services/reasoning/dist/engine/index.js, the tests the TypeScript source): encodeFindings
// and logLikelihoodRatios once per case, posteriorFromLlr at each α, fitCalibration on the training
// folds, and the metrics (logLoss, brierScore, expectedCalibrationError, topKAccuracy). Nothing here
// invents a number: a fold with no case is reported as such, not filled in.
import { createHash } from 'node:crypto';

export const DEFAULT_FOLDS = 5;

/**
 * The fold of a case: the first 4 bytes of sha256(id) as an unsigned big-endian integer, mod k.
 * Fixed by the id alone, so reruns (and a case file reordered or extended) keep every case's fold.
 * @param {string} id
 * @param {number} [k]
 */
export function foldOf(id, k = DEFAULT_FOLDS) {
  if (!Number.isInteger(k) || k < 2)
    throw new RangeError(`the number of folds must be an integer ≥ 2, not ${k}`);
  return createHash('sha256').update(id, 'utf8').digest().readUInt32BE(0) % k;
}

/**
 * The findings a /api/v1/diagnosis response says it used, as the engine's findings.
 * @param {any} response
 * @returns {{ feature: string, present: boolean, certainty: number }[]}
 */
export function responseFindings(response) {
  if (response === null || typeof response !== 'object' || !Array.isArray(response.findings))
    throw new TypeError('the response has no findings array');
  return response.findings.map((/** @type {any} */ f, /** @type {number} */ i) => {
    if (typeof f?.feature !== 'string' || typeof f?.present !== 'boolean' || typeof f?.certainty !== 'number')
      throw new TypeError(`findings[${i}] lacks feature, present or certainty`);
    return { feature: f.feature, present: f.present, certainty: f.certainty };
  });
}

/**
 * A labelled case: truth = the expected condition when the model scores it, else null ("none of
 * these", the unknown hypothesis), as fitCalibration counts it.
 * @param {import('./calibrate-lib.js').ModelLike} model
 * @param {{ id: string, expected: string, findings: readonly { feature: string, present: boolean, certainty: number }[] }} c
 * @returns {import('./calibrate-lib.js').CalibrationCase}
 */
export function labelCase(model, c) {
  return {
    id: c.id,
    expected: c.expected,
    findings: c.findings,
    truth: model.conditionIndex.has(c.expected) ? c.expected : null,
  };
}

/**
 * Each case's uncalibrated log-likelihood ratios, computed once (the posterior at any α follows).
 * @param {any} engine
 * @param {any} model
 * @param {readonly import('./calibrate-lib.js').CalibrationCase[]} cases
 * @returns {import('./calibrate-lib.js').PreparedCase[]}
 */
export function prepareCases(engine, model, cases) {
  return cases.map((c) => ({
    ...c,
    llr: engine.logLikelihoodRatios(model, engine.encodeFindings(model, c.findings)),
  }));
}

/**
 * The engine's result for each case at α, every condition ranked (the metrics need the whole
 * distribution), as the metrics' EvaluatedCase.
 * @param {any} engine
 * @param {any} model
 * @param {readonly import('./calibrate-lib.js').PreparedCase[]} cases
 * @param {number} alpha
 */
export function predict(engine, model, cases, alpha) {
  return cases.map((c) => {
    const posterior = engine.posteriorFromLlr(model, c.llr, alpha);
    const ranked = model.conditions
      .map((/** @type {string} */ condition, /** @type {number} */ i) => ({
        condition,
        probability: posterior[i],
        contributions: [],
        i,
      }))
      .sort((/** @type {any} */ a, /** @type {any} */ b) => b.probability - a.probability || a.i - b.i)
      .map(({ condition, probability, contributions }) => ({ condition, probability, contributions }));
    return { truth: c.truth, result: { ranked, unknown: posterior[model.unknownIndex], nextFindings: [] } };
  });
}

/**
 * The figures of a set of evaluated cases, with the engine's metrics: mean log loss (nats), Brier
 * score, top-label ECE (10 bins; "none of these" is a label), top-1 with "none of these" ranked
 * among the conditions (all cases), and top-1 among the conditions (cases the base scores).
 * @param {any} engine
 * @param {readonly any[]} evaluated
 * @returns {import('./calibrate-lib.js').Figures}
 */
export function figures(engine, evaluated) {
  return {
    cases: evaluated.length,
    logLoss: engine.logLoss(evaluated),
    brier: engine.brierScore(evaluated),
    ece: engine.expectedCalibrationError(evaluated, 10),
    top1: engine.topKAccuracy(evaluated, 1, { includeUnknown: true }),
    top1Scorable: engine.topKAccuracy(evaluated, 1),
    meanUnknown: evaluated.reduce((s, e) => s + e.result.unknown, 0) / evaluated.length,
  };
}

/**
 * K-fold cross-validation of α: for each fold, α fitted (engine.fitCalibration) on the other folds
 * and the fold's cases scored at α = 1 and at that α; the pooled figures are over every held-out
 * prediction together (each case scored with the α its fold's training set gave). A fold with no
 * case, or whose complement is empty, is listed with `skipped` and no figures; when no fold can be
 * scored (the cases fall in fewer than two folds) it throws.
 * @param {any} engine
 * @param {any} model the uncalibrated model (α = 1)
 * @param {readonly import('./calibrate-lib.js').CalibrationCase[]} cases
 * @param {{ k?: number, fitOptions?: object }} [options]
 * @returns {import('./calibrate-lib.js').CrossValidation}
 */
export function crossValidate(engine, model, cases, options = {}) {
  const k = options.k ?? DEFAULT_FOLDS;
  if (cases.length === 0) throw new RangeError('cross-validation needs at least one case');
  const prepared = prepareCases(engine, model, cases);
  const fold = prepared.map((c) => foldOf(c.id, k));
  /** @type {import('./calibrate-lib.js').FoldResult[]} */
  const folds = [];
  /** @type {any[]} */
  const pooledBefore = [];
  /** @type {any[]} */
  const pooledAfter = [];
  for (let f = 0; f < k; f += 1) {
    const test = prepared.filter((_, i) => fold[i] === f);
    const train = prepared.filter((_, i) => fold[i] !== f);
    const ids = test.map((c) => c.id);
    if (test.length === 0 || train.length === 0) {
      folds.push({
        fold: f,
        ids,
        train: train.length,
        skipped: test.length === 0 ? 'no case falls in this fold' : 'no case left to fit on',
      });
      continue;
    }
    const calibration = engine.fitCalibration(model, train, options.fitOptions ?? {});
    const before = predict(engine, model, test, 1);
    const after = predict(engine, model, test, calibration.alpha);
    pooledBefore.push(...before);
    pooledAfter.push(...after);
    folds.push({
      fold: f,
      ids,
      train: train.length,
      alpha: calibration.alpha,
      atBound: calibration.fit?.atBound ?? false,
      before: figures(engine, before),
      after: figures(engine, after),
    });
  }
  if (pooledBefore.length === 0)
    throw new RangeError(
      `no fold could be scored: the ${cases.length} case(s) fall in fewer than two of the ${k} folds`,
    );
  return {
    k,
    folds,
    pooled: { before: figures(engine, pooledBefore), after: figures(engine, pooledAfter) },
    improvement: {
      logLoss: pairedDifference(engine.logLoss, pooledBefore, pooledAfter),
      brier: pairedDifference(engine.brierScore, pooledBefore, pooledAfter),
    },
  };
}

/**
 * The paired per-case difference metric(before) − metric(after) over the held-out predictions
 * (positive: the fitted α is better): its mean (the difference of the pooled figures) and the
 * standard error of that mean (sample standard deviation / √n), for a rough sense of how much of
 * the difference a set this small can show.
 * @param {(cases: readonly any[]) => number} metric
 * @param {readonly any[]} before
 * @param {readonly any[]} after
 */
export function pairedDifference(metric, before, after) {
  const d = before.map((b, i) => metric([b]) - metric([after[i]]));
  const n = d.length;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const variance = n < 2 ? Number.NaN : d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1);
  return { mean, se: Math.sqrt(variance / n), n };
}

/** @param {number} x @param {number} [digits] */
const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
/** @param {number} x */
const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a');

/** @param {import('./calibrate-lib.js').Figures} f */
const figureCells = (f) => [
  String(f.cases),
  fmt(f.logLoss),
  fmt(f.brier),
  fmt(f.ece),
  pct(f.top1),
  pct(f.top1Scorable),
  fmt(f.meanUnknown),
];

/**
 * The cross-validation table: per fold and pooled, held-out figures before (α = 1) and after.
 * @param {import('./calibrate-lib.js').CrossValidation} cv
 */
export function formatCrossValidation(cv) {
  const head = [
    'fold',
    'α (train)',
    'α',
    'n',
    'log loss',
    'Brier',
    'ECE',
    'top-1',
    'top-1 scored',
    'mean unknown',
  ];
  const rows = [head];
  for (const f of cv.folds) {
    if (f.before === undefined || f.after === undefined) {
      rows.push([String(f.fold), `skipped: ${f.skipped ?? ''}`]);
      continue;
    }
    const fitted = `${fmt(f.alpha ?? Number.NaN, 4)} (n=${f.train})${f.atBound ? ' at bound' : ''}`;
    rows.push([String(f.fold), fitted, '1', ...figureCells(f.before)]);
    rows.push(['', '', 'fitted', ...figureCells(f.after)]);
  }
  rows.push(['pooled', '', '1', ...figureCells(cv.pooled.before)]);
  rows.push(['', '', 'fitted', ...figureCells(cv.pooled.after)]);
  const widths = head.map((_, c) =>
    Math.max(...rows.filter((r) => r.length > 2).map((r) => (r[c] ?? '').length)),
  );
  const { logLoss, brier } = cv.improvement;
  return [
    ...rows.map((r) =>
      r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c] ?? 0))).join('  '),
    ),
    `held-out improvement (α = 1 minus fitted, paired over ${logLoss.n} cases, mean ± standard error): ` +
      `log loss ${fmt(logLoss.mean)} ± ${fmt(logLoss.se)}, Brier ${fmt(brier.mean)} ± ${fmt(brier.se)}`,
  ].join('\n');
}
