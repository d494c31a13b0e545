import { describe, expect, it } from '@jest/globals';
import type { EngineResult } from '../../services/reasoning/src/domain/types.js';
import {
  brierScore,
  compileModel,
  expectedCalibrationError,
  fitCalibration,
  logLoss,
  meanLogLoss,
  parseCalibration,
  ReferenceEngine,
  reliabilityDiagram,
  topKAccuracy,
  type CompiledModel,
  type EvaluatedCase,
} from '../../services/reasoning/src/engine/index.js';
import {
  duplicatedFeaturesKb,
  randomSyntheticKb,
  sampleCases,
  type SampledCase,
} from './fixtures/synthetic-kb.js';

// Calibration fitting and the evaluation metrics, on cases drawn with fixed seeds from SYNTHETIC
// knowledge bases (not clinical data).

async function evaluate(model: CompiledModel, cases: readonly SampledCase[]): Promise<EvaluatedCase[]> {
  const results = await new ReferenceEngine(model).scoreBatch(cases.map((c) => c.findings));
  return results.map((result, i) => ({ result, truth: cases[i]!.truth }));
}

describe('fitCalibration', () => {
  const base = randomSyntheticKb({ conditions: 8, features: 16, linksPerCondition: 5, seed: 3 });

  it('leaves a model that generated the cases as it is (α ≈ 1)', () => {
    const model = compileModel(base);
    const cases = sampleCases(base, { seed: 1, count: 3000 });
    const calibration = fitCalibration(model, cases);
    expect(calibration.alpha).toBeGreaterThan(0.9);
    expect(calibration.alpha).toBeLessThan(1.1);
    expect(calibration.fit!.logLossAfter).toBeLessThanOrEqual(calibration.fit!.logLossBefore);
    expect(calibration.fit!.atBound).toBe(false);
    expect(calibration).toMatchObject({ method: 'likelihood-power', kbId: base.id, kbVersion: '1' });
  });

  it('softens naive Bayes where it double counts, lowering held-out log loss, Brier score and ECE', async () => {
    // Every feature is reported three times (perfectly correlated copies): the model counts the
    // evidence three times, and α = 1/3 recovers the process that generated the cases.
    const kb = duplicatedFeaturesKb(base, 3);
    const raw = compileModel(kb);
    const train = sampleCases(kb, { seed: 1, count: 1500, copies: 3 });
    const test = sampleCases(kb, { seed: 2, count: 1500, copies: 3 });
    const calibration = fitCalibration(raw, train);
    expect(calibration.alpha).toBeGreaterThan(0.28);
    expect(calibration.alpha).toBeLessThan(0.39);
    expect(calibration.fit!.iterations).toBeLessThan(20);

    const calibrated = compileModel(kb, calibration);
    const before = await evaluate(raw, test);
    const after = await evaluate(calibrated, test);
    expect(meanLogLoss(calibrated, test)).toBeLessThan(meanLogLoss(raw, test));
    expect(logLoss(after)).toBeCloseTo(meanLogLoss(calibrated, test), 9);
    expect(logLoss(after)).toBeLessThan(logLoss(before));
    expect(brierScore(after)).toBeLessThan(brierScore(before));
    const eceBefore = expectedCalibrationError(before);
    const eceAfter = expectedCalibrationError(after);
    expect(eceAfter).toBeLessThan(eceBefore / 2);
    expect(eceAfter).toBeLessThan(0.05);
    // α weighs the evidence against the priors, so a few top conditions may change; not for the worse here.
    expect(topKAccuracy(after, 1)).toBeGreaterThanOrEqual(topKAccuracy(before, 1));
  });

  it('is stored as JSON with the base it was fitted for, and read back', () => {
    const model = compileModel(base);
    const calibration = fitCalibration(model, sampleCases(base, { seed: 4, count: 200 }));
    const stored: unknown = JSON.parse(JSON.stringify(calibration));
    expect(parseCalibration(stored)).toEqual(calibration);
    expect(compileModel(base, parseCalibration(stored)).calibration.alpha).toBe(calibration.alpha);
    expect(() => parseCalibration({ ...calibration, alpha: -1 })).toThrow(/alpha/);
    expect(() => compileModel({ ...base, version: '2' }, parseCalibration(stored))).toThrow(/fitted for/);
  });

  it('refuses what it cannot fit', () => {
    const model = compileModel(base);
    expect(() => fitCalibration(model, [])).toThrow(/at least one/);
    expect(() => fitCalibration(model, [{ findings: [], truth: 'syn-nobody' }])).toThrow(/syn-nobody/);
    expect(() => fitCalibration(model, [{ findings: [], truth: null }], { lower: 2, upper: 1 })).toThrow(
      /interval/,
    );
  });
});

describe('metrics', () => {
  const result = (ranked: [string, number][], unknown: number): EngineResult => ({
    ranked: ranked.map(([condition, probability]) => ({ condition, probability, contributions: [] })),
    unknown,
    nextFindings: [],
  });
  const cases: EvaluatedCase[] = [
    {
      result: result(
        [
          ['a', 0.7],
          ['b', 0.2],
        ],
        0.1,
      ),
      truth: 'a',
    },
    {
      result: result(
        [
          ['b', 0.5],
          ['a', 0.3],
        ],
        0.2,
      ),
      truth: 'a',
    },
    {
      result: result(
        [
          ['a', 0.25],
          ['b', 0.15],
        ],
        0.6,
      ),
      truth: null,
    },
    {
      result: result(
        [
          ['b', 0.9],
          ['a', 0.05],
        ],
        0.05,
      ),
      truth: 'b',
    },
  ];

  it('Brier score and log loss, worked by hand', () => {
    const brier = [
      0.3 ** 2 + 0.2 ** 2 + 0.1 ** 2,
      0.5 ** 2 + 0.7 ** 2 + 0.2 ** 2,
      0.25 ** 2 + 0.15 ** 2 + 0.4 ** 2,
      0.1 ** 2 + 0.05 ** 2 + 0.05 ** 2,
    ];
    expect(brierScore(cases)).toBeCloseTo(brier.reduce((s, v) => s + v, 0) / 4, 12);
    expect(logLoss(cases)).toBeCloseTo(
      -(Math.log(0.7) + Math.log(0.3) + Math.log(0.6) + Math.log(0.9)) / 4,
      12,
    );
  });

  it('ECE over top-label confidence bins, the unknown hypothesis a possible prediction', () => {
    // Predictions: a@0.7 right, b@0.5 wrong, unknown@0.6 right, b@0.9 right.
    const bins = reliabilityDiagram(cases, 10);
    expect(bins.filter((b) => b.count > 0).map((b) => [b.upper, b.count, b.accuracy])).toEqual([
      [0.5, 1, 0],
      [0.6, 1, 1],
      [0.7, 1, 1],
      [0.9, 1, 1],
    ]);
    expect(expectedCalibrationError(cases, 10)).toBeCloseTo((0.5 + 0.4 + 0.3 + 0.1) / 4, 12);
    expect(expectedCalibrationError(cases, 1)).toBeCloseTo(Math.abs(0.75 - (0.7 + 0.5 + 0.6 + 0.9) / 4), 12);
  });

  it('top-k accuracy over the differential, or with the unknown hypothesis ranked', () => {
    expect(topKAccuracy(cases, 1)).toBeCloseTo(2 / 3, 12);
    expect(topKAccuracy(cases, 2)).toBe(1);
    expect(topKAccuracy(cases, 1, { includeUnknown: true })).toBe(3 / 4);
    expect(topKAccuracy([cases[2]!], 1)).toBeNaN();
    expect(() => topKAccuracy(cases, 0)).toThrow(RangeError);
  });

  it('lumps the mass of conditions a truncated ranking left out', () => {
    const cut: EvaluatedCase = { result: result([['a', 0.5]], 0.2), truth: 'b' };
    expect(logLoss([cut])).toBeCloseTo(-Math.log(0.3), 12);
    expect(brierScore([cut])).toBeCloseTo(0.25 + 0.04 + 0.49, 12);
  });
});
