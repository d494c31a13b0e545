import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import * as engine from '../../../services/reasoning/src/engine/index.js';
import {
  duplicatedFeaturesKb,
  randomSyntheticKb,
  sampleCases,
} from '../../reasoning/fixtures/synthetic-kb.js';
import {
  crossValidate,
  DEFAULT_FOLDS,
  figures,
  foldOf,
  formatCrossValidation,
  labelCase,
  pairedDifference,
  predict,
  prepareCases,
  responseFindings,
  type CalibrationCase,
} from './calibrate-lib.js';

// The calibration tool's fold assignment and cross-validation arithmetic (calibrate-lib.js), on
// cases drawn with fixed seeds from a SYNTHETIC base (made-up numbers, not clinical data), checked
// against the engine's own functions computed independently here.

const { compileModel, fitCalibration, meanLogLoss } = engine;

// Every feature reported three times (perfectly correlated copies): naive Bayes counts the evidence
// three times, so the fitted α is well below 1 and the held-out figures move.
const kb = duplicatedFeaturesKb(
  randomSyntheticKb({ conditions: 5, features: 8, linksPerCondition: 3, seed: 7 }),
  3,
);
const model = compileModel(kb);
const cases: CalibrationCase[] = sampleCases(kb, { seed: 11, count: 60, copies: 3 }).map((c, i) => ({
  id: `syn-case-${String(i).padStart(3, '0')}`,
  expected: c.truth ?? 'syn-not-in-base',
  findings: c.findings,
  truth: c.truth,
}));

const sha = (id: string): number => createHash('sha256').update(id, 'utf8').digest().readUInt32BE(0);

describe('foldOf', () => {
  it('is sha256(id) mod k, fixed by the id alone', () => {
    expect(DEFAULT_FOLDS).toBe(5);
    // Hand-checked: sha256("a") starts ca978112 = 3398926610; 3398926610 mod 5 = 0.
    expect(sha('a')).toBe(0xca978112);
    expect(foldOf('a')).toBe(0);
    expect(foldOf('en-dengue-01')).toBe(3395770243 % 5);
    for (const c of cases) {
      expect(foldOf(c.id)).toBe(sha(c.id) % 5);
      expect(foldOf(c.id, 3)).toBe(sha(c.id) % 3);
    }
    expect(() => foldOf('a', 1)).toThrow(/folds/);
    expect(() => foldOf('a', 2.5)).toThrow(/folds/);
  });

  it('puts every case in exactly one fold, the same whatever the order of the cases', () => {
    const cv = crossValidate(engine, model, cases);
    const reversed = crossValidate(engine, model, [...cases].reverse());
    expect(cv.folds.flatMap((f) => f.ids).sort()).toEqual(cases.map((c) => c.id).sort());
    for (const f of cv.folds) {
      expect(f.ids).toEqual(cases.filter((c) => foldOf(c.id) === f.fold).map((c) => c.id));
      expect(f.train).toBe(cases.length - f.ids.length);
      expect([...(reversed.folds[f.fold]?.ids ?? [])].sort()).toEqual([...f.ids].sort());
      expect(reversed.folds[f.fold]?.alpha).toBeCloseTo(f.alpha ?? Number.NaN, 10);
    }
    expect(crossValidate(engine, model, cases)).toEqual(cv); // reruns are identical
  });
});

describe('crossValidate', () => {
  const cv = crossValidate(engine, model, cases);
  const scored = cv.folds.filter((f) => f.before !== undefined);

  it('fits α on the other folds and scores the held-out fold at α = 1 and at that α', () => {
    expect(cv.k).toBe(5);
    expect(scored).toHaveLength(5); // 60 cases: no fold is empty
    for (const f of scored) {
      const test = cases.filter((c) => f.ids.includes(c.id));
      const train = cases.filter((c) => !f.ids.includes(c.id));
      const alpha = fitCalibration(model, train).alpha;
      expect(f.alpha).toBe(alpha);
      expect(f.alpha).toBeLessThan(0.8);
      // The metrics' log loss equals the fitting code's own loss (a separate implementation).
      expect(f.before?.logLoss).toBeCloseTo(meanLogLoss(model, test, 1), 10);
      expect(f.after?.logLoss).toBeCloseTo(meanLogLoss(model, test, alpha), 10);
      expect(f.before?.cases).toBe(test.length);
    }
  });

  it('pools every held-out prediction: the means are the case-weighted means of the folds', () => {
    const n = scored.reduce((s, f) => s + (f.before?.cases ?? 0), 0);
    expect(n).toBe(cases.length);
    for (const key of ['logLoss', 'brier', 'top1', 'meanUnknown'] as const) {
      for (const when of ['before', 'after'] as const) {
        const weighted = scored.reduce((s, f) => s + (f[when]?.[key] ?? 0) * (f[when]?.cases ?? 0), 0) / n;
        expect(cv.pooled[when][key]).toBeCloseTo(weighted, 10);
      }
    }
    // Before, every case is scored at α = 1: the pooled figures are those of the whole set.
    const prepared = prepareCases(engine, model, cases);
    const whole = figures(engine, predict(engine, model, prepared, 1));
    for (const [key, value] of Object.entries(whole) as [keyof typeof whole, number][]) {
      expect(cv.pooled.before[key]).toBeCloseTo(value, 12);
    }
    // After, each case with its own fold's α; ECE bins the pooled predictions (not a mean of folds).
    const after = prepared.flatMap((c) =>
      predict(engine, model, [c], cv.folds[foldOf(c.id)]?.alpha ?? Number.NaN),
    );
    expect(cv.pooled.after.ece).toBeCloseTo(engine.expectedCalibrationError(after, 10), 12);
    // The paired differences: their mean is the difference of the pooled figures.
    expect(cv.improvement.logLoss.mean).toBeCloseTo(cv.pooled.before.logLoss - cv.pooled.after.logLoss, 10);
    expect(cv.improvement.brier.mean).toBeCloseTo(cv.pooled.before.brier - cv.pooled.after.brier, 10);
    expect(cv.improvement.logLoss.n).toBe(cases.length);
    expect(cv.improvement.logLoss.se).toBeGreaterThan(0);
    // The held-out figures improve where the model double counts.
    expect(cv.pooled.after.logLoss).toBeLessThan(cv.pooled.before.logLoss);
    expect(cv.pooled.after.brier).toBeLessThan(cv.pooled.before.brier);
  });

  it("scores like the engine's own result builder", async () => {
    const alpha = 0.4;
    const calibrated = engine.withCalibration(model, { ...model.calibration, alpha });
    const prepared = prepareCases(engine, model, cases.slice(0, 10));
    const ours = predict(engine, model, prepared, alpha);
    const theirs = await new engine.ReferenceEngine(calibrated).scoreBatch(prepared.map((c) => c.findings));
    ours.forEach((o, i) => {
      const t = theirs[i]!;
      expect(o.result.unknown).toBeCloseTo(t.unknown, 12);
      expect(o.result.ranked.map((r) => r.condition)).toEqual(t.ranked.map((r) => r.condition));
      o.result.ranked.forEach((r, j) => expect(r.probability).toBeCloseTo(t.ranked[j]!.probability, 12));
    });
  });

  it('lists a fold with no case, or nothing to fit on, instead of inventing figures', () => {
    const two = cases.slice(0, 2);
    const cv2 = crossValidate(engine, model, two, { k: 50 });
    const empty = cv2.folds.filter((f) => f.ids.length === 0);
    expect(empty.length).toBeGreaterThanOrEqual(48);
    for (const f of empty) {
      expect(f.skipped).toBe('no case falls in this fold');
      expect(f.before).toBeUndefined();
    }
    // Two cases in different folds of two: each fold is fitted on the other's single case.
    const pair = [cases.find((c) => foldOf(c.id, 2) === 0)!, cases.find((c) => foldOf(c.id, 2) === 1)!];
    expect(crossValidate(engine, model, pair, { k: 2 }).folds.every((f) => f.train === 1)).toBe(true);
    // One case: its fold has nothing to fit on, the other fold nothing to score; no figures at all.
    expect(() => crossValidate(engine, model, cases.slice(0, 1), { k: 2 })).toThrow(
      /no fold could be scored/,
    );
    expect(() => crossValidate(engine, model, [])).toThrow(/at least one case/);
    expect(formatCrossValidation(cv2)).toContain('skipped: no case falls in this fold');
    expect(formatCrossValidation(cv)).toMatch(/^pooled {2}.*\n {2,}fitted/m);
  });
});

describe('pairedDifference', () => {
  it('is the mean of the per-case differences with its standard error (hand-computed)', () => {
    const metric = (c: readonly { v: number }[]) => c[0]!.v;
    // differences 1, 2, 3: mean 2, sample sd 1, se 1/√3.
    const r = pairedDifference(metric, [{ v: 2 }, { v: 3 }, { v: 4 }], [{ v: 1 }, { v: 1 }, { v: 1 }]);
    expect(r.mean).toBe(2);
    expect(r.se).toBeCloseTo(1 / Math.sqrt(3), 12);
    expect(r.n).toBe(3);
  });
});

describe('labelling', () => {
  it('labels a case "none of these" (null) when the base does not score its condition', () => {
    const findings = [{ feature: model.features[0]!, present: true, certainty: 1 }];
    expect(labelCase(model, { id: 'x', expected: model.conditions[0]!, findings }).truth).toBe(
      model.conditions[0],
    );
    expect(labelCase(model, { id: 'y', expected: 'leptospirosis', findings }).truth).toBeNull();
  });

  it('reads the findings a response used, and refuses a response without them', () => {
    const response = {
      findings: [
        { feature: 'fever', present: true, certainty: 1, origin: 'rules', label_en: 'Fever' },
        { feature: 'cough', present: false, certainty: 0.5, origin: 'rules', label_en: 'Cough' },
      ],
    };
    expect(responseFindings(response)).toEqual([
      { feature: 'fever', present: true, certainty: 1 },
      { feature: 'cough', present: false, certainty: 0.5 },
    ]);
    expect(() => responseFindings({})).toThrow(/no findings array/);
    expect(() => responseFindings({ findings: [{ feature: 'fever' }] })).toThrow(/findings\[0\]/);
  });
});
