import { describe, expect, it } from '@jest/globals';
import type { Finding, KnowledgeBase } from '../../services/reasoning/src/domain/types.js';
import {
  compileModel,
  contributions,
  encodeFindings,
  expectedEntropyReduction,
  FindingsError,
  identityCalibration,
  informationGains,
  ModelError,
  ReferenceEngine,
  scoreEvidence,
  withCalibration,
} from '../../services/reasoning/src/engine/index.js';
import { SYNTHETIC_KB, SYNTHETIC_SOURCE } from './fixtures/synthetic-kb.js';

// The compiled model and the reference math, on SYNTHETIC knowledge bases (not clinical data).

const present = (feature: string, certainty = 1): Finding => ({ feature, present: true, certainty });
const absent = (feature: string, certainty = 1): Finding => ({ feature, present: false, certainty });

function compileError(kb: KnowledgeBase): ModelError {
  try {
    compileModel(kb);
  } catch (error) {
    if (error instanceof ModelError) return error;
    throw error;
  }
  throw new Error('compiled');
}

function probabilityOf(
  model: ReturnType<typeof compileModel>,
  findings: Finding[],
  condition: string,
): number {
  const s = scoreEvidence(model, encodeFindings(model, findings));
  return s.posterior[model.conditionIndex.get(condition)!]!;
}

describe('compileModel', () => {
  it('lays out the tables: links where given, the leak elsewhere, unknown last with the leak and the remaining prior', () => {
    const model = compileModel(SYNTHETIC_KB);
    const H = model.hypotheses;
    expect(H).toBe(5);
    expect(model.unknownIndex).toBe(4);
    const p = (f: string, h: number) => model.probability[model.featureIndex.get(f)! * H + h]!;
    expect(p('syn-spot', 0)).toBe(0.9); // linked
    expect(p('syn-spot', 1)).toBe(0.02); // unlinked: default leak
    expect(p('syn-spot', 4)).toBe(0.02); // unknown: leak
    expect(p('syn-orphan', 2)).toBe(0.2); // per-feature leak
    expect(p('syn-orphan', 4)).toBe(0.2);
    expect(Math.exp(model.logPrior[4]!)).toBeCloseTo(0.5, 12);
    expect(Math.exp(model.logPrior[0]!)).toBeCloseTo(0.2, 12);
    const i = model.featureIndex.get('syn-spot')! * H;
    expect(model.llrAbsent[i]).toBeCloseTo(Math.log(0.1 / 0.98), 12);
    expect(model.llrPresent[i]).toBeCloseTo(Math.log(0.9 / 0.02), 12);
    expect(model.llrPresent[i + 4]).toBe(0);
    expect(model.version).toBe('synthetic-kb@1+nb-leak+alpha=1');
  });

  it('refuses priors that leave no mass for the unknown hypothesis', () => {
    const kb: KnowledgeBase = {
      ...SYNTHETIC_KB,
      conditions: SYNTHETIC_KB.conditions.map((c, i) => ({ ...c, prior: i === 0 ? 0.7 : c.prior })),
    };
    expect(compileError(kb).issues).toEqual([
      {
        path: 'conditions',
        message: expect.stringContaining('must sum to less than 1') as unknown as string,
      },
    ]);
    const exact: KnowledgeBase = {
      ...SYNTHETIC_KB,
      conditions: SYNTHETIC_KB.conditions.map((c) => ({ ...c, prior: 0.25 })),
    };
    expect(compileError(exact).message).toContain('none of the above');
  });

  it('refuses probabilities outside (0, 1): priors, links, leaks', () => {
    const kb: KnowledgeBase = {
      ...SYNTHETIC_KB,
      conditions: SYNTHETIC_KB.conditions.map((c, i) => ({ ...c, prior: i === 1 ? 0 : c.prior })),
      links: [
        ...SYNTHETIC_KB.links,
        { condition: 'syn-delta', feature: 'syn-spot', probability: 1, source: SYNTHETIC_SOURCE.id },
        { condition: 'syn-gamma', feature: 'syn-spot', probability: Number.NaN, source: SYNTHETIC_SOURCE.id },
      ],
      leak: { ...SYNTHETIC_KB.leak, perFeature: { 'syn-orphan': 1.5 } },
    };
    expect(compileError(kb).issues.map((i) => i.path)).toEqual([
      'conditions[1].prior',
      'leak.perFeature.syn-orphan',
      'links[12].probability',
      'links[13].probability',
    ]);
    expect(
      compileError({ ...SYNTHETIC_KB, leak: { ...SYNTHETIC_KB.leak, default: 0 } }).issues[0]!.path,
    ).toBe('leak.default');
  });

  it('refuses unknown and duplicate ids, and numbers citing no listed source', () => {
    const kb: KnowledgeBase = {
      ...SYNTHETIC_KB,
      features: [...SYNTHETIC_KB.features, SYNTHETIC_KB.features[0]!],
      links: [
        { condition: 'syn-alpha', feature: 'syn-nowhere', probability: 0.5, source: SYNTHETIC_SOURCE.id },
        { condition: 'syn-nobody', feature: 'syn-spot', probability: 0.5, source: SYNTHETIC_SOURCE.id },
        { condition: 'syn-alpha', feature: 'syn-spot', probability: 0.5, source: 'uncited' },
        ...SYNTHETIC_KB.links,
      ],
      leak: { ...SYNTHETIC_KB.leak, perFeature: { 'syn-ghost': 0.1 } },
    };
    const issues = compileError(kb).issues;
    expect(issues.map((i) => i.path)).toEqual([
      'features[7].id',
      'leak.perFeature.syn-ghost',
      'links[0].feature',
      'links[1].condition',
      'links[2].source',
      'links[3]', // syn-alpha → syn-spot again, after links[2]
    ]);
    expect(issues[2]!.message).toContain('unknown feature id "syn-nowhere"');
  });

  it('ties a calibration to the base it was fitted for', () => {
    expect(() =>
      compileModel(SYNTHETIC_KB, { ...identityCalibration(SYNTHETIC_KB), kbVersion: '0' }),
    ).toThrow(/fitted for synthetic-kb@0/);
    expect(() => compileModel(SYNTHETIC_KB, { ...identityCalibration(SYNTHETIC_KB), alpha: 0 })).toThrow(
      ModelError,
    );
    const model = compileModel(SYNTHETIC_KB);
    const softer = withCalibration(model, { ...identityCalibration(SYNTHETIC_KB), alpha: 0.5 });
    expect(softer.version).toBe('synthetic-kb@1+nb-leak+alpha=0.5');
    expect(softer.fingerprint).not.toBe(model.fingerprint);
  });
});

describe('reference scoring', () => {
  const model = compileModel(SYNTHETIC_KB);

  it('gives the priors, unknown included, when nothing is reported; posteriors sum to 1', () => {
    const none = scoreEvidence(model, encodeFindings(model, []));
    expect([...none.posterior].map((p) => Number(p.toFixed(12)))).toEqual([0.2, 0.15, 0.1, 0.05, 0.5]);
    const some = scoreEvidence(model, encodeFindings(model, [present('syn-ache'), absent('syn-cough')]));
    expect(some.posterior.reduce((s, p) => s + p, 0)).toBeCloseTo(1, 12);
  });

  it('matches Bayes rule worked by hand', () => {
    // present syn-spot, absent syn-ache: P(h|E) ∝ π_h P(spot|h) (1 − P(ache|h)).
    const joint = [
      0.2 * 0.9 * 0.4,
      0.15 * 0.02 * 0.2,
      0.1 * 0.02 * 0.98,
      0.05 * 0.02 * 0.98,
      0.5 * 0.02 * 0.98,
    ];
    const z = joint.reduce((s, v) => s + v, 0);
    const s = scoreEvidence(model, encodeFindings(model, [present('syn-spot'), absent('syn-ache')]));
    joint.forEach((v, h) => expect(s.posterior[h]).toBeCloseTo(v / z, 12));
  });

  it('moves probability the right way: present raises, absent lowers, uncertain lies in between', () => {
    const prior = probabilityOf(model, [], 'syn-alpha');
    const stated = probabilityOf(model, [present('syn-spot')], 'syn-alpha');
    const possible = probabilityOf(model, [present('syn-spot', 0.5)], 'syn-alpha');
    expect(stated).toBeGreaterThan(0.8);
    expect(possible).toBeGreaterThan(prior);
    expect(possible).toBeLessThan(stated);

    const denied = probabilityOf(model, [absent('syn-spot')], 'syn-alpha');
    const doubtful = probabilityOf(model, [absent('syn-spot', 0.5)], 'syn-alpha');
    expect(denied).toBeLessThan(prior / 3);
    expect(doubtful).toBeLessThan(prior);
    expect(doubtful).toBeGreaterThan(denied);

    expect(probabilityOf(model, [present('syn-spot', 0)], 'syn-alpha')).toBeCloseTo(prior, 12);
  });

  it('lets evidence for no listed condition raise the unknown mass', () => {
    // syn-itch only in syn-delta; absent everything else the conditions are known for.
    const before = scoreEvidence(model, encodeFindings(model, [])).posterior[4]!;
    const after = scoreEvidence(
      model,
      encodeFindings(model, [
        absent('syn-spot'),
        absent('syn-ache'),
        absent('syn-cough'),
        absent('syn-chill'),
        absent('syn-itch'),
      ]),
    ).posterior[4]!;
    expect(after).toBeGreaterThan(before);
  });

  it('counts several findings on one feature once: the most certain wins, an equal contradiction cancels', () => {
    const once = probabilityOf(model, [present('syn-spot')], 'syn-alpha');
    expect(
      probabilityOf(model, [present('syn-spot'), present('syn-spot', 0.3), present('syn-spot')], 'syn-alpha'),
    ).toBe(once);
    expect(probabilityOf(model, [absent('syn-spot', 0.4), present('syn-spot')], 'syn-alpha')).toBe(once);
    const prior = probabilityOf(model, [], 'syn-alpha');
    const cancelled = encodeFindings(model, [present('syn-spot', 0.7), absent('syn-spot', 0.7)]);
    expect(cancelled.weighted).toEqual([]);
    expect(cancelled.mentioned).toEqual([model.featureIndex.get('syn-spot')]);
    expect(scoreEvidence(model, cancelled).posterior[0]).toBeCloseTo(prior, 12);
  });

  it('refuses unknown feature ids and bad certainties, naming every one', () => {
    let error: unknown;
    try {
      encodeFindings(model, [
        present('syn-spot'),
        present('syn-unheard-of'),
        { feature: 'syn-ache', present: true, certainty: 1.2 },
      ]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FindingsError);
    const issues = (error as FindingsError).issues;
    expect((error as FindingsError).status).toBe(422);
    expect(issues.map((i) => i.loc)).toEqual([
      ['findings', 1, 'feature'],
      ['findings', 2, 'certainty'],
    ]);
    expect(issues[0]!.msg).toContain('syn-unheard-of');
  });
});

describe('contributions', () => {
  const model = compileModel(SYNTHETIC_KB, { ...identityCalibration(SYNTHETIC_KB), alpha: 0.7 });

  it('lists what supports and what argues against a condition, adding up to its log posterior odds against unknown', () => {
    const findings = [
      present('syn-spot'),
      absent('syn-ache', 0.8),
      present('syn-flat'),
      present('syn-cough', 0.5),
    ];
    const evidence = encodeFindings(model, findings);
    const s = scoreEvidence(model, evidence);
    const alpha = contributions(model, evidence, 0);
    // syn-flat has the same probability everywhere: no contribution. Support first.
    expect(alpha.map((c) => c.feature)).toEqual(['syn-spot', 'syn-ache']);
    expect(alpha[0]!.llr).toBeCloseTo(0.7 * Math.log(0.9 / 0.02), 12);
    expect(alpha[1]!.llr).toBeCloseTo(0.7 * 0.8 * Math.log(0.4 / 0.98), 12);
    for (let h = 0; h < 4; h++) {
      const sum = contributions(model, evidence, h).reduce((t, c) => t + c.llr, 0);
      const odds = Math.log(s.posterior[h]! / s.posterior[4]!) - (model.logPrior[h]! - model.logPrior[4]!);
      expect(sum).toBeCloseTo(odds, 10);
    }
  });
});

describe('information gain', () => {
  // Two SYNTHETIC conditions, equally likely: syn-disc tells them apart, syn-flat does not.
  const kb: KnowledgeBase = {
    ...SYNTHETIC_KB,
    id: 'synthetic-ig',
    conditions: [SYNTHETIC_KB.conditions[0]!, { ...SYNTHETIC_KB.conditions[1]!, prior: 0.2 }],
    features: ['syn-shared', 'syn-disc', 'syn-weak', 'syn-flat'].map((id) => ({
      ...SYNTHETIC_KB.features[0]!,
      id,
    })),
    links: [
      { condition: 'syn-alpha', feature: 'syn-shared', probability: 0.8, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-beta', feature: 'syn-shared', probability: 0.8, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-alpha', feature: 'syn-disc', probability: 0.9, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-beta', feature: 'syn-disc', probability: 0.1, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-alpha', feature: 'syn-weak', probability: 0.6, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-beta', feature: 'syn-weak', probability: 0.4, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-alpha', feature: 'syn-flat', probability: 0.5, source: SYNTHETIC_SOURCE.id },
      { condition: 'syn-beta', feature: 'syn-flat', probability: 0.5, source: SYNTHETIC_SOURCE.id },
    ],
    leak: { default: 0.02, source: SYNTHETIC_SOURCE.id, perFeature: { 'syn-flat': 0.5 } },
  };
  const model = compileModel(kb);

  it('equals the expected entropy reduction worked out by updating on both outcomes', () => {
    const s = scoreEvidence(model, encodeFindings(model, [present('syn-shared')]));
    const gains = informationGains(model, s.posterior);
    for (let f = 0; f < 4; f++)
      expect(gains[f]).toBeCloseTo(expectedEntropyReduction(model, s.posterior, f), 9);
  });

  it('suggests the discriminating feature first, nothing already reported, nothing uninformative', async () => {
    const result = await new ReferenceEngine(model).score([present('syn-shared')]);
    expect(result.ranked.map((r) => r.condition)).toEqual(['syn-alpha', 'syn-beta']);
    expect(result.nextFindings.map((n) => n.feature)).toEqual(['syn-disc', 'syn-weak']);
    expect(result.nextFindings[0]!.gain).toBeGreaterThan(0.3);
    expect(result.nextFindings[0]!.gain).toBeGreaterThan(5 * result.nextFindings[1]!.gain);
    const without = await new ReferenceEngine(model).score([present('syn-shared')], {
      notSuggested: new Set(['syn-disc']),
      maxNextFindings: 1,
    });
    expect(without.nextFindings.map((n) => n.feature)).toEqual(['syn-weak']);
  });
});

describe('a link with a specificity (a diagnostic-accuracy study)', () => {
  const study = (specificity?: number): KnowledgeBase => ({
    ...SYNTHETIC_KB,
    links: SYNTHETIC_KB.links.map((l) =>
      l.condition === 'syn-alpha' && l.feature === 'syn-ache'
        ? { ...l, ...(specificity === undefined ? {} : { specificity }) }
        : l,
    ),
  });

  it("scores the finding by the study's own likelihood ratios, not against the leak", () => {
    const model = compileModel(study(0.7));
    const H = model.hypotheses;
    const i = model.featureIndex.get('syn-ache')! * H + model.conditionIndex.get('syn-alpha')!;
    // sens 0.6, spec 0.7: LR+ = 0.6 / 0.3 = 2, LR− = 0.4 / 0.7.
    expect(model.llrPresent[i]).toBeCloseTo(Math.log(2), 12);
    expect(model.llrAbsent[i]).toBeCloseTo(Math.log(0.4 / 0.7), 12);
    // The other condition linked to the feature keeps sens / leak; P(f | h) stays the sensitivity.
    const j = model.featureIndex.get('syn-ache')! * H + model.conditionIndex.get('syn-beta')!;
    expect(model.llrPresent[j]).toBeCloseTo(Math.log(0.8 / 0.02), 12);
    expect(model.probability[i]).toBe(0.6);
  });

  it('moves the posterior by exactly that ratio, and changes the fingerprint', () => {
    const withStudy = compileModel(study(0.7));
    const without = compileModel(study());
    expect(withStudy.fingerprint).not.toBe(without.fingerprint);
    const odds = (m: ReturnType<typeof compileModel>) => {
      const s = scoreEvidence(m, encodeFindings(m, [present('syn-ache')]));
      return s.posterior[m.conditionIndex.get('syn-alpha')!]! / s.posterior[m.unknownIndex]!;
    };
    expect(odds(withStudy)).toBeCloseTo((0.2 / 0.5) * 2, 12);
    expect(odds(without)).toBeCloseTo((0.2 / 0.5) * (0.6 / 0.02), 12);
  });

  it('refuses a specificity outside (0, 1)', () => {
    expect(compileError(study(1)).issues.map((i) => i.path)).toContain('links[1].specificity');
  });
});
