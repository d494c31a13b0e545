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

/** The conditions the base scores (README "State"); each has its prior and at least 3 sourced links. */
const SCORABLE = [
  'acute_appendicitis',
  'acute_cholecystitis',
  'acute_cystitis',
  'acute_myocardial_infarction',
  'acute_pancreatitis',
  'acute_pyelonephritis',
  'atrial_fibrillation',
  'bacterial_meningitis',
  'copd_exacerbation',
  'covid19',
  'dengue',
  'gerd',
  'hand_foot_mouth_disease',
  'heart_failure',
  'hepatitis_a',
  'infectious_gastroenteritis',
  'influenza',
  'ischaemic_stroke',
  'leptospirosis',
  'malaria',
  'measles',
  'migraine',
  'pneumonia',
  'pulmonary_embolism',
  'pulmonary_tuberculosis',
  'scrub_typhus',
  'streptococcal_pharyngitis',
  'typhoid_fever',
  'varicella',
];
const UNIFORM_PRIOR = 'primary-care-uniform-prior';
/** The declared even share: "none of these" keeps 0.05, the 29 conditions share 0.95 (rounded down). */
const SHARE = 0.0327;
const LEAK_DEFAULT = 'primary-care-leak-default';
/**
 * The findings with their own leak (README "Leak"), every other finding keeping the default.
 * Version 0.5.0: the share of adult ED visits with that finding as the chief complaint in Arvig et
 * al. 2022 (a lower bound of its presence). Version 0.6.0: the share of the 7,124 women attending
 * rural mobile primary-care clinics in Tamil Nadu with that symptom recorded (Logaraj et al. 2018).
 */
const CHIEF_COMPLAINT_SOURCE = 'arvig-2022-ed-chief-complaints';
const PRESENCE_SOURCE = 'logaraj-2018-symptoms-mobile-clinics-tamil-nadu';
const LEAK_SOURCE_OF: Record<string, string> = {
  abdominal_pain: CHIEF_COMPLAINT_SOURCE,
  chest_pain: CHIEF_COMPLAINT_SOURCE,
  dyspnea: CHIEF_COMPLAINT_SOURCE,
  fever: CHIEF_COMPLAINT_SOURCE,
  headache: PRESENCE_SOURCE,
  myalgia: PRESENCE_SOURCE,
  nasal_congestion: PRESENCE_SOURCE,
};
const PER_FEATURE_LEAK = {
  abdominal_pain: 0.16,
  chest_pain: 0.08,
  dyspnea: 0.12,
  fever: 0.08,
  headache: 0.131,
  myalgia: 0.183,
  nasal_congestion: 0.136,
};

/**
 * Findings the extractor knows that no condition links yet (CURATION.md rounds 6 to 12 say why each;
 * round 10 linked pharyngeal exudate, nasal congestion, Murphy's sign and urinary urgency, round 11
 * petechiae, round 12 heartburn and raised jugular venous pressure).
 */
const UNLINKED_FEATURES = ['epistaxis', 'gingival_bleeding', 'pleuritic_chest_pain'].sort();

describe('the shipped primary-care base', () => {
  it('loads without a problem, scoring exactly the conditions with a prior and sourced links', async () => {
    const result = await loadKnowledgeBase(PRIMARY_CARE);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    const { knowledgeBase, report } = result;
    expect(knowledgeBase.conditions.map((c) => c.id).sort()).toEqual(SCORABLE);
    expect(report.conditions.scorable).toBe(SCORABLE.length);
    expect(report.conditions.withoutLinks).toEqual([]);
    expect(report.conditions.notScorable).toHaveLength(report.conditions.defined - SCORABLE.length);
    expect(report.conditions.notScorable.every((c) => c.reason === 'no sourced prior')).toBe(true);
    expect(report.conditions.notScorable.map((c) => c.id)).toEqual(
      expect.arrayContaining(['asthma_exacerbation', 'peptic_ulcer', 'tension_type_headache']),
    );
    // Every scorable condition is described by at least 3 links.
    for (const id of SCORABLE) {
      expect(knowledgeBase.links.filter((l) => l.condition === id).length).toBeGreaterThanOrEqual(3);
    }
    // Round 7: acute pyelonephritis, whose 2 links waited since round 3, has 4 and is scored. Round 8
    // gave measles 2 links that waited; round 9 gave it 5 more, so none of its links waits and measles
    // is scored (the loader drops only links of conditions without a prior).
    const doc = await readKbDocument(PRIMARY_CARE);
    expect(doc.links.filter((l) => l.condition === 'acute_pyelonephritis')).toHaveLength(4);
    // Round 12: essential hypertension's first link (headache at diagnosis) waits for two more; the
    // loader drops it, and it is the only link that waits.
    const waiting = doc.links.filter((l) => !SCORABLE.includes(l.condition));
    expect(waiting.map((l) => [l.condition, l.feature])).toEqual([['essential_hypertension', 'headache']]);
    expect(report.links.dropped).toBe(waiting.length);
    expect(report.links.used).toBe(report.links.defined - waiting.length);
    expect(report.links.defined).toBe(doc.links.length);
    expect(knowledgeBase.links.filter((l) => l.condition === 'measles')).toHaveLength(7);
    // Priors are the declared even share of 0.95 (a modelling choice); the rest is "none of these".
    expect(knowledgeBase.conditions.every((c) => c.prior === SHARE)).toBe(true);
    expect(SHARE).toBe(Math.floor((0.95 / SCORABLE.length) * 1e4) / 1e4);
    expect(report.priorSum).toBeCloseTo(SHARE * SCORABLE.length, 10);
    expect(1 - report.priorSum).toBeGreaterThanOrEqual(0.05);
    expect(knowledgeBase.leak.default).toBe(0.05);
    expect(knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    expect(knowledgeBase.leak.perFeature).toEqual(PER_FEATURE_LEAK);
    expect([...report.modellingChoices].sort()).toEqual([LEAK_DEFAULT, UNIFORM_PRIOR]);
  });

  it('gives the per-feature leaks of cited presentation cohorts, each with the value as the source prints it', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const withLeak = doc.features.filter((f) => f.leak !== null);
    expect(Object.fromEntries(withLeak.map((f) => [f.id, f.leak]))).toEqual(PER_FEATURE_LEAK);
    for (const f of withLeak) {
      // One source per set of leaks, each set from one population (README "Leak").
      expect(f.leak_source).toBe(LEAK_SOURCE_OF[f.id]);
      expect(f.leak_locator).toMatch(
        f.leak_source === CHIEF_COMPLAINT_SOURCE ? /chief complaints/ : /7,124 female patients/,
      );
      // The source's own words and percentage ("fever (8%)", "headache (13.1%)") are in the notes
      // and match the number.
      const asGiven = /leak as given: "[^"(]+\((\d+(?:\.\d+)?)%\)"/.exec(f.notes ?? '');
      expect(asGiven).not.toBeNull();
      expect(Number(asGiven![1]) / 100).toBeCloseTo(f.leak!, 10);
      // A chief-complaint share is a lower bound of the finding's presence: above the default it
      // replaces, never below it (a lower bound under 0.05 would not justify lowering the leak).
      if (f.leak_source === CHIEF_COMPLAINT_SOURCE) {
        expect(f.leak!).toBeGreaterThan(doc.manifest!.leak!.default);
      }
    }
    const sources = new Map(doc.manifest!.sources.map((s) => [s.id, s]));
    expect(sources.get(CHIEF_COMPLAINT_SOURCE)?.kind).toBe('cohort');
    expect(sources.get(CHIEF_COMPLAINT_SOURCE)?.citation).toMatch(
      /West J Emerg Med\. 2022.*doi:10\.5811\/westjem\.2022\.9\.56332/,
    );
    expect(sources.get(PRESENCE_SOURCE)?.kind).toBe('cohort');
    expect(sources.get(PRESENCE_SOURCE)?.citation).toMatch(
      /^Logaraj M.*doi:10\.22159\/ajpcr\.2018\.v11i10\.20585/,
    );
  });

  it('cites, for every number, a source of its kb.json; every clinical source has a citation and a url', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const sources = new Map(doc.manifest!.sources.map((s) => [s.id, s]));
    const cited = new Set<string>();
    for (const c of doc.conditions) {
      if (c.prior === null) continue;
      expect(c.prior_source).not.toBeNull();
      expect(c.prior_locator).not.toBeNull();
      cited.add(c.prior_source!);
    }
    for (const l of doc.links) {
      expect(l.probability).not.toBeNull();
      expect(l.source).not.toBeNull();
      expect(l.locator).not.toBeNull(); // where in the source
      expect(l.as_given).not.toBeNull(); // the source's own value (45/52, 87%)
      cited.add(l.source!);
    }
    cited.add(doc.manifest!.leak!.source);
    for (const f of doc.features) {
      if (f.leak === null) continue;
      expect(f.leak_source).not.toBeNull();
      cited.add(f.leak_source!);
    }
    for (const id of cited) {
      const source = sources.get(id);
      expect(source).toBeDefined();
      if (source!.kind === 'modelling-choice') {
        // A default, not a measurement: it says so and says what was done.
        expect(source!.citation).toMatch(/^ClinicalSuite modelling choice, not a clinical number/);
      } else {
        expect(['cohort', 'review', 'registry', 'guideline']).toContain(source!.kind);
        expect(source!.url).toMatch(/^https:\/\//);
        expect(source!.citation.length).toBeGreaterThan(40);
      }
    }
    // No source is listed that nothing uses, apart from the ones the definitions cite in prose.
    const definitional = new Set(['icd10cm-2026', 'who-icd10-2019', 'hpo-terms-2025-01-16']);
    for (const id of sources.keys()) expect(cited.has(id) || definitional.has(id)).toBe(true);
  });

  it('keeps the as-given value consistent with the probability where the source gives a fraction', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const fractions = doc.links.filter((l) => /^\d+\/\d+/.test(l.as_given ?? ''));
    expect(fractions.length).toBeGreaterThan(0);
    for (const l of fractions) {
      const [n, d] = l.as_given!.split(/[/ ]/).map(Number);
      expect(l.probability).toBeCloseTo(n! / d!, 3);
    }
    // Single percentages: the probability is that percentage (or 0.999 for "all", with the reason).
    // "100%" is clamped to 0.999, checked below.
    for (const l of doc.links.filter(
      (x) => /^\d+(\.\d+)?%$/.test(x.as_given ?? '') && x.probability !== 0.999,
    )) {
      expect(l.probability).toBeCloseTo(Number(l.as_given!.slice(0, -1)) / 100, 6);
    }
    for (const l of doc.links.filter((x) => x.probability === 0.999)) expect(l.notes).toMatch(/0\.999/);
    // "n (%)" as a table prints it: the percentage is the rounded n/N, so the probability rounds to it.
    for (const l of doc.links.filter((x) => /^\d+ \(\d+(\.\d+)?%?\)$/.test(x.as_given ?? ''))) {
      const pct = Number(/\((\d+(?:\.\d+)?)%?\)/.exec(l.as_given!)![1]);
      expect(Math.abs((l.probability ?? Number.NaN) * 100 - pct)).toBeLessThanOrEqual(0.5);
    }
  });

  it('leaves unlinked exactly the findings no returned source gave a number for (README "State")', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const linked = new Set(doc.links.map((l) => l.feature));
    const unlinked = doc.features
      .filter((f) => !linked.has(f.id) && f.kind !== 'demographic')
      .map((f) => f.id)
      .sort();
    expect(unlinked).toEqual(UNLINKED_FEATURES);
  });
  it('defines conditions with ICD-10-CM codes and vi/en titles, features with HPO terms and vi/en words', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const dengue = doc.conditions.find((c) => c.id === 'dengue');
    expect(dengue).toMatchObject({
      icd10: 'A90',
      title_en: 'Dengue fever',
      title_vi: 'Sốt xuất huyết Dengue',
      prior: SHARE,
      prior_source: UNIFORM_PRIOR,
    });
    expect(dengue?.notes).toContain('ICD-10-CM 2026 A90: Dengue fever [classical dengue]');
    for (const c of doc.conditions) {
      expect(c.icd10).toMatch(ICD10_PATTERN);
      expect(c.title_vi).not.toBeNull();
      expect(c.prior === null).toBe(!SCORABLE.includes(c.id));
    }
    const fever = doc.features.find((f) => f.id === 'fever');
    expect(fever).toMatchObject({ kind: 'symptom', label_en: 'Fever', label_vi: 'Sốt', hpo: 'HP:0001945' });
    expect(fever?.synonyms_vi).toContain('sốt cao');
    expect(doc.features.every((f) => f.label_vi !== null)).toBe(true);
  });

  it('lets a curator make one more condition scorable by adding its prior (SYNTHETIC numbers), within the prior sum', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const manifest = {
      ...doc.manifest!,
      sources: [
        ...doc.manifest!.sources,
        { id: SYNTHETIC_SOURCE, kind: 'cohort' as const, citation: 'synthetic' },
      ],
    };
    // Peptic ulcer has no link yet: three SYNTHETIC links and a prior make it scorable.
    const withPrior = (prior: number) =>
      validateKb({
        ...doc,
        manifest,
        conditions: doc.conditions.map((c) =>
          c.id === 'peptic_ulcer'
            ? condition({ ...c, prior, prior_source: SYNTHETIC_SOURCE, prior_locator: 'table 1' })
            : c,
        ),
        links: [
          ...doc.links,
          ...['epigastric_pain', 'nausea', 'melena'].map((feature) =>
            link({ condition: 'peptic_ulcer', feature, probability: 0.5 }),
          ),
        ],
      });
    const result = withPrior(0.01);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.knowledgeBase.conditions.map((c) => c.id).sort()).toEqual(
      [...SCORABLE, 'peptic_ulcer'].sort(),
    );
    // Only the one waiting link is dropped (essential hypertension's, round 12); the 3 new ones are used.
    expect(result.report.links.dropped).toBe(1);
    expect(result.report.priorSum).toBeCloseTo(SHARE * SCORABLE.length + 0.01, 10);
    // The 29 shares leave 0.0517 for "none of these": a prior that takes all of it is refused.
    expect(SCORABLE).toHaveLength(29);
    expect(withPrior(0.06).problems.map((p) => p.code)).toContain('prior-sum');
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
    expect(merged.knowledgeBase.features.find((f) => f.id === 'fever')?.synonyms).toEqual([
      'Hyperthermia',
      'Pyrexia',
      'sốt cao',
      'nóng sốt',
      'phát sốt',
    ]);
    const feverLinks = merged.knowledgeBase.links
      .filter((l) => l.feature === 'fever')
      .map((l) => l.condition);
    expect(feverLinks).toEqual(expect.arrayContaining(['dengue', 'covid19', 'OMIM:1']));
    // The primary-care leak stays the default; the HPO base's own default is kept per feature.
    expect(merged.knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    // The unified finding keeps the first base's own leak (fever: the cited 0.08, not HPO's 0.01).
    expect(merged.knowledgeBase.leak.perFeature?.fever).toBe(PER_FEATURE_LEAK.fever);
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
      SCORABLE.length + hpoBase.knowledgeBase.conditions.length,
    );
    expect(merged.knowledgeBase.leak.source).toBe(LEAK_DEFAULT);
    const priorSum = merged.knowledgeBase.conditions.reduce((s, c) => s + c.prior, 0);
    expect(priorSum).toBeLessThan(1);
  });
});
