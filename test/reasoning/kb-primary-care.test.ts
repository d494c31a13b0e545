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

describe('the shipped primary-care definitions', () => {
  it('load without a problem, every condition reported not scorable (no sourced prior yet)', async () => {
    const result = await loadKnowledgeBase(PRIMARY_CARE);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    const { knowledgeBase, report } = result;
    expect(knowledgeBase.conditions).toEqual([]);
    expect(knowledgeBase.links).toEqual([]);
    expect(report.conditions.scorable).toBe(0);
    expect(report.conditions.notScorable.length).toBe(report.conditions.defined);
    expect(report.conditions.notScorable.every((c) => c.reason === 'no sourced prior')).toBe(true);
    expect(report.conditions.notScorable.map((c) => c.id)).toEqual(
      expect.arrayContaining([
        'dengue',
        'pulmonary_tuberculosis',
        'pneumonia',
        'acute_myocardial_infarction',
      ]),
    );
    expect(report.numbersBySource).toEqual({}); // no number shipped
    expect(report.priorSum).toBe(0);
  });

  it('define conditions with ICD-10-CM codes and vi/en titles, features with HPO terms and vi/en words', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const dengue = doc.conditions.find((c) => c.id === 'dengue');
    expect(dengue).toMatchObject({
      icd10: 'A90',
      title_en: 'Dengue fever',
      title_vi: 'Sốt xuất huyết Dengue',
    });
    expect(dengue?.notes).toContain('ICD-10-CM 2026 A90: Dengue fever [classical dengue]');
    for (const c of doc.conditions) {
      expect(c.icd10).toMatch(ICD10_PATTERN);
      expect(c.title_vi).not.toBeNull();
      expect(c.prior).toBeNull();
    }
    const fever = doc.features.find((f) => f.id === 'fever');
    expect(fever).toMatchObject({ kind: 'symptom', label_en: 'Fever', label_vi: 'Sốt', hpo: 'HP:0001945' });
    expect(fever?.synonyms_vi).toContain('sốt cao');
    expect(doc.features.every((f) => f.label_vi !== null)).toBe(true);
  });

  it('become scorable condition by condition once a curator adds a prior with its source (SYNTHETIC numbers)', async () => {
    const doc = await readKbDocument(PRIMARY_CARE);
    const manifest = {
      ...doc.manifest!,
      sources: [
        ...doc.manifest!.sources,
        { id: SYNTHETIC_SOURCE, kind: 'cohort' as const, citation: 'synthetic' },
      ],
      leak: { default: 0.01, source: SYNTHETIC_SOURCE },
    };
    const conditions = doc.conditions.map((c) =>
      c.id === 'dengue'
        ? condition({ ...c, prior: 0.05, prior_source: SYNTHETIC_SOURCE, prior_locator: 'table 1' })
        : c,
    );
    const result = validateKb({
      ...doc,
      manifest,
      conditions,
      links: [link({ condition: 'dengue', feature: 'fever', probability: 0.9 })],
    });
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.knowledgeBase.conditions.map((c) => c.id)).toEqual(['dengue']);
    expect(result.report.conditions.notScorable).toHaveLength(doc.conditions.length - 1);
    // Merged with an HPO-keyed base, the primary-care feature absorbs the HPO feature of the same term.
    const hpoBase = validateKb({
      manifest: { ...manifest, id: 'hpo-like' },
      conditions: [condition({ id: 'OMIM:1', prior: 0.00001 })],
      features: [{ ...doc.features.find((f) => f.id === 'fever')!, id: 'HP:0001945', synonyms_vi: [] }],
      links: [link({ condition: 'OMIM:1', feature: 'HP:0001945', probability: 0.5 })],
    });
    if (!hpoBase.ok) throw new Error(JSON.stringify(hpoBase.problems));
    const merged = mergeKnowledgeBases([
      { label: 'primary-care', knowledgeBase: result.knowledgeBase },
      { label: 'hpo', knowledgeBase: hpoBase.knowledgeBase },
    ]);
    expect(merged.ok && merged.knowledgeBase.features.find((f) => f.id === 'fever')?.synonyms).toEqual([
      'Hyperthermia',
      'Pyrexia',
      'sốt cao',
      'nóng sốt',
      'phát sốt',
    ]);
    expect(merged.ok && merged.knowledgeBase.links.map((l) => `${l.condition}:${l.feature}`)).toEqual([
      'dengue:fever',
      'OMIM:1:fever',
    ]);
  });

  it('merge with a real HPO import without a clash', async () => {
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
    expect(merged.ok && merged.knowledgeBase.conditions).toHaveLength(7);
    expect(merged.ok && merged.knowledgeBase.leak.source).toBe('clinicalsuite-leak-default');
  });
});
