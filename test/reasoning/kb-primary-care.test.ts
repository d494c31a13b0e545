import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import {
  ICD10_PATTERN,
  importHpo,
  loadKnowledgeBase,
  mergeKnowledgeBases,
  readKbDocument,
  validateKb,
} from '../../services/reasoning/src/kb/index.js';
import { condition, link, SYNTHETIC_SOURCE } from './kb-helpers.js';

const PRIMARY_CARE = fileURLToPath(new URL('../../services/reasoning/kb/primary-care/', import.meta.url));
const LEAK_DEFAULT = 'primary-care-leak-default';
const EXPERT_ESTIMATE = 'clinicalsuite-expert-estimate';

/** Conditions of Vietnamese primary care and emergency that the base must score (issue 31). */
const MUST_SCORE = [
  'dengue',
  'pulmonary_tuberculosis',
  'typhoid_fever',
  'melioidosis',
  'leptospirosis',
  'scrub_typhus',
  'malaria',
  'hand_foot_mouth_disease',
  'pneumonia',
  'copd_exacerbation',
  'acute_appendicitis',
  'acute_myocardial_infarction',
  'ischaemic_stroke',
  'tetanus',
  'rabies',
];

describe('the shipped primary-care base', () => {
  it('loads without a problem, every one of its 100+ conditions scorable and linked to the findings that matter for it', async () => {
    const result = await loadKnowledgeBase(PRIMARY_CARE);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    const { knowledgeBase, report } = result;
    expect(knowledgeBase.conditions.length).toBeGreaterThanOrEqual(100);
    expect(report.conditions.notScorable).toEqual([]);
    expect(report.conditions.withoutLinks).toEqual([]);
    expect(report.links.dropped).toBe(0);
    expect(knowledgeBase.conditions.map((c) => c.id)).toEqual(expect.arrayContaining(MUST_SCORE));
    // A condition with a handful of links cannot compete: each has its typical findings and those
    // whose absence argues against it.
    for (const c of knowledgeBase.conditions)
      expect([c.id, knowledgeBase.links.filter((l) => l.condition === c.id).length >= 8]).toEqual([
        c.id,
        true,
      ]);
    // Priors are shares of acute visits and leave mass for "none of these".
    expect(report.priorSum).toBeLessThan(0.9);
    // Every finding has its own background rate, and every one is linked to some condition.
    expect(Object.keys(knowledgeBase.leak.perFeature ?? {}).length).toBe(knowledgeBase.features.length);
    expect(knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    const linked = new Set(knowledgeBase.links.map((l) => l.feature));
    expect(knowledgeBase.features.filter((f) => f.kind !== 'demographic' && !linked.has(f.id))).toEqual([]);
    // The evidence grades are counted, and the cited ones are a real share.
    expect(report.numbersByGrade.study).toBeGreaterThanOrEqual(300);
    expect(report.numbersByGrade['expert estimate']).toBeGreaterThan(0);
  });

  it('cites, for every number, a source of its kind; a cited number says where and as what, an estimate what it rests on', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const sources = new Map(doc.manifest!.sources.map((s) => [s.id, s]));
    const kindOf = (id: string | null) => sources.get(id ?? '')?.kind;
    const cited = new Set<string>([doc.manifest!.leak!.source]);
    for (const c of doc.conditions) {
      expect([c.id, kindOf(c.prior_source)]).toEqual([c.id, expect.any(String)]);
      cited.add(c.prior_source!);
      // An estimated prior says what it rests on.
      if (c.prior_source === EXPERT_ESTIMATE)
        expect([c.id, (c.notes ?? c.prior_locator ?? '').length > 10]).toEqual([c.id, true]);
    }
    for (const l of doc.links) {
      const where = `${l.condition} → ${l.feature}`;
      expect([where, kindOf(l.source)]).toEqual([where, expect.any(String)]);
      cited.add(l.source!);
      if (l.source === EXPERT_ESTIMATE) expect([where, (l.notes ?? '').length > 0]).toEqual([where, true]);
      else {
        expect([where, l.locator !== null, l.as_given !== null]).toEqual([where, true, true]);
      }
    }
    for (const f of doc.features) {
      expect([f.id, kindOf(f.leak_source)]).toEqual([f.id, expect.any(String)]);
      cited.add(f.leak_source!);
    }
    for (const id of cited) {
      const source = sources.get(id)!;
      if (source.kind === 'modelling-choice') {
        expect(source.citation).toMatch(/^ClinicalSuite modelling choice, not a clinical number/);
      } else if (source.kind === 'expert-estimate') {
        expect(source.citation).toMatch(/^ClinicalSuite clinical estimate/);
      } else {
        expect(['cohort', 'review', 'registry', 'guideline', 'textbook']).toContain(source.kind);
        expect([id, source.url]).toEqual([id, expect.stringMatching(/^https?:\/\//)]);
        expect(source.citation.length).toBeGreaterThan(40);
      }
    }
    // No source is listed that nothing uses, apart from the ones the definitions cite in prose.
    const definitional = new Set(['icd10cm-2026', 'who-icd10-2019', 'hpo-terms-2025-01-16']);
    for (const id of sources.keys()) expect([id, cited.has(id) || definitional.has(id)]).toEqual([id, true]);
  });

  it('keeps the as-given value consistent with the probability where the source gives a fraction', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const fractions = doc.links.filter((l) => /^\d+\/\d+$/.test(l.as_given ?? ''));
    expect(fractions.length).toBeGreaterThan(0);
    for (const l of fractions) {
      const [n, d] = l.as_given!.split('/').map(Number);
      expect([l.condition, l.feature, l.probability]).toEqual([
        l.condition,
        l.feature,
        expect.closeTo(n! / d!, 2),
      ]);
    }
    // "n (%)" as a table prints it: the percentage is the rounded n/N, so the probability rounds to it.
    for (const l of doc.links.filter((x) => /^\d+ \(\d+(\.\d+)?%?\)$/.test(x.as_given ?? ''))) {
      const pct = Number(/\((\d+(?:\.\d+)?)%?\)/.exec(l.as_given!)![1]);
      expect(Math.abs((l.probability ?? Number.NaN) * 100 - pct)).toBeLessThanOrEqual(0.5);
    }
  });

  it('defines conditions with ICD-10 codes and vi/en titles, features with vi/en words, and what each implies', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const dengue = doc.conditions.find((c) => c.id === 'dengue');
    expect(dengue).toMatchObject({ icd10: 'A90', title_vi: expect.stringMatching(/^Sốt xuất huyết/) });
    for (const c of doc.conditions) {
      expect([c.id, ICD10_PATTERN.test(c.icd10 ?? '')]).toEqual([c.id, true]);
      expect([c.id, c.title_vi !== null]).toEqual([c.id, true]);
    }
    const fever = doc.features.find((f) => f.id === 'fever');
    expect(fever).toMatchObject({ kind: 'symptom', label_en: 'Fever', label_vi: 'Sốt', hpo: 'HP:0001945' });
    expect(fever?.synonyms_vi).toContain('sốt cao');
    expect(doc.features.every((f) => f.label_vi !== null)).toBe(true);
    expect(doc.features.find((f) => f.id === 'productive_cough')?.implies).toBe('cough');
    expect(doc.features.find((f) => f.id === 'right_lower_quadrant_pain')?.implies).toBe('abdominal_pain');
  });

  it('lets a curator add a condition (SYNTHETIC numbers) within the prior sum, and refuses a prior that leaves nothing for "none of these"', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const loaded = await loadKnowledgeBase(PRIMARY_CARE);
    if (!loaded.ok) throw new Error('the shipped base does not load');
    const manifest = {
      ...doc.manifest!,
      sources: [
        ...doc.manifest!.sources,
        { id: SYNTHETIC_SOURCE, kind: 'cohort' as const, citation: 'synthetic' },
      ],
    };
    const withNew = (prior: number) =>
      validateKb({
        ...doc,
        manifest,
        conditions: [
          ...doc.conditions,
          condition({ id: 'synthetic_new', icd10: 'R50.9', prior, prior_source: SYNTHETIC_SOURCE }),
        ],
        links: [
          ...doc.links,
          ...['fever', 'nausea', 'melena'].map((feature) =>
            link({ condition: 'synthetic_new', feature, probability: 0.5 }),
          ),
        ],
      });
    const result = withNew(0.01);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.knowledgeBase.conditions).toHaveLength(loaded.knowledgeBase.conditions.length + 1);
    expect(result.report.priorSum).toBeCloseTo(loaded.report.priorSum + 0.01, 10);
    expect(withNew(1 - loaded.report.priorSum).problems.map((p) => p.code)).toContain('prior-sum');
  });

  it('merges with an HPO-keyed base: the primary-care feature absorbs the HPO feature of the same term', async () => {
    const primary = await loadKnowledgeBase(PRIMARY_CARE);
    if (!primary.ok) throw new Error(JSON.stringify(primary.problems));
    const doc = await readKbDocument(PRIMARY_CARE);
    const hpoBase = validateKb({
      manifest: {
        ...doc.manifest!,
        id: 'hpo-like',
        sources: [{ id: SYNTHETIC_SOURCE, kind: 'cohort' as const, citation: 'synthetic' }],
        leak: { default: 0.01, source: SYNTHETIC_SOURCE },
      },
      conditions: [condition({ id: 'OMIM:1', prior: 0.00001 })],
      // The same finding under its HPO id, without the primary-care base's own leak and its source.
      features: [
        {
          ...doc.features.find((f) => f.id === 'fever')!,
          id: 'HP:0001945',
          synonyms_vi: [],
          leak: null,
          leak_source: null,
          leak_locator: null,
        },
      ],
      links: [link({ condition: 'OMIM:1', feature: 'HP:0001945', probability: 0.5 })],
    });
    if (!hpoBase.ok) throw new Error(JSON.stringify(hpoBase.problems));
    const merged = mergeKnowledgeBases([
      { label: 'primary-care', knowledgeBase: primary.knowledgeBase },
      { label: 'hpo', knowledgeBase: hpoBase.knowledgeBase },
    ]);
    expect(merged.problems).toEqual([]);
    if (!merged.ok) return;
    expect(merged.knowledgeBase.features.find((f) => f.id === 'fever')?.synonyms).toEqual(
      primary.knowledgeBase.features.find((f) => f.id === 'fever')?.synonyms,
    );
    const feverLinks = merged.knowledgeBase.links
      .filter((l) => l.feature === 'fever')
      .map((l) => l.condition);
    expect(feverLinks).toEqual(expect.arrayContaining(['dengue', 'covid19', 'OMIM:1']));
    // The primary-care leak stays the default; the HPO base's own default is kept per feature.
    expect(merged.knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    // The unified finding keeps the first base's own leak (fever: the cited 0.08, not HPO's 0.01).
    expect(merged.knowledgeBase.leak.perFeature?.fever).toBe(primary.knowledgeBase.leak.perFeature?.fever);
  });

  it('merges with a real HPO import without a clash, the priors still summing below 1', async () => {
    const fixtures = new URL('./kb-fixtures/hpo/', import.meta.url);
    const hpo = importHpo(
      readFileSync(new URL('phenotype-excerpt.hpoa', fixtures), 'utf8'),
      readFileSync(new URL('hp-excerpt.obo', fixtures), 'utf8'),
    );
    const hpoBase = validateKb(hpo.document);
    const primary = await loadKnowledgeBase(PRIMARY_CARE);
    if (!hpoBase.ok || !primary.ok) throw new Error('a base does not load');
    const merged = mergeKnowledgeBases([
      { label: 'primary-care', knowledgeBase: primary.knowledgeBase },
      { label: 'hpo', knowledgeBase: hpoBase.knowledgeBase },
    ]);
    expect(merged.problems).toEqual([]);
    if (!merged.ok) return;
    expect(merged.knowledgeBase.conditions).toHaveLength(
      primary.knowledgeBase.conditions.length + hpoBase.knowledgeBase.conditions.length,
    );
    expect(merged.knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    const priorSum = merged.knowledgeBase.conditions.reduce((s, c) => s + c.prior, 0);
    expect(priorSum).toBeLessThan(1);
  });
});
