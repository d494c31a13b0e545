import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  loadKnowledgeBases,
  mergeKnowledgeBases,
  NO_LEAK_SOURCE,
  validateKb,
  writeKbDocument,
  type KbDocument,
} from '../../services/reasoning/src/kb/index.js';
import type { KnowledgeBase } from '../../services/reasoning/src/domain/types.js';
import { condition, feature, link, SYNTHETIC_SOURCE, syntheticDocument } from './kb-helpers.js';

function kb(doc: KbDocument): KnowledgeBase {
  const result = validateKb(doc);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.knowledgeBase;
}

/** A second synthetic base: rare diseases keyed by HPO ids, another leak. */
function rareDocument(): KbDocument {
  const base = syntheticDocument('rare');
  return {
    manifest: { ...base.manifest, id: 'rare', leak: { default: 0.01, source: SYNTHETIC_SOURCE } },
    conditions: [
      condition({ id: 'OMIM:200000', prior: 0.00001 }),
      condition({ id: 'OMIM:300000', prior: 0.00001 }),
    ],
    features: [
      feature({ id: 'HP:0001945', hpo: 'HP:0001945', label_en: 'Fever', synonyms_en: ['Hyperthermia'] }),
      feature({ id: 'HP:0001250', hpo: 'HP:0001250', label_en: 'Seizure' }),
    ],
    links: [
      link({ condition: 'OMIM:200000', feature: 'HP:0001945', probability: 0.895 }),
      link({ condition: 'OMIM:300000', feature: 'HP:0001250', probability: 0.17 }),
    ],
  };
}

describe('merging knowledge bases', () => {
  it('unites conditions and sources, unifies features by HPO term and re-points the links', () => {
    const result = mergeKnowledgeBases([
      { label: 'primary', knowledgeBase: kb(syntheticDocument()) },
      { label: 'rare', knowledgeBase: kb(rareDocument()) },
    ]);
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    const merged = result.knowledgeBase;
    expect(merged.id).toBe('synthetic+rare');
    expect(merged.version).toBe('synthetic@1.0.0+rare@1.0.0');
    expect(merged.sources.map((s) => s.id)).toEqual([SYNTHETIC_SOURCE, 'synthetic-cohort']);
    expect(merged.conditions.map((c) => c.id)).toEqual([
      'flu_like',
      'OMIM:100000',
      'OMIM:200000',
      'OMIM:300000',
    ]);
    expect(merged.features.map((f) => f.id)).toEqual(['fever', 'cough', 'thrombocytopenia', 'HP:0001250']);
    expect(result.unified).toEqual([{ label: 'rare', from: 'HP:0001945', into: 'fever', hpo: 'HP:0001945' }]);
    expect(merged.features[0]!.synonyms).toEqual([
      'Pyrexia',
      'high temperature',
      'sốt cao',
      'nóng sốt',
      'Fever',
      'Hyperthermia',
    ]);
    expect(merged.links).toContainEqual({
      condition: 'OMIM:200000',
      feature: 'fever',
      probability: 0.895,
      source: SYNTHETIC_SOURCE,
    });
    // The first base's leak is the default; the second base's own features keep theirs.
    expect(merged.leak).toEqual({
      default: 0.02,
      source: SYNTHETIC_SOURCE,
      perFeature: { cough: 0.05, 'HP:0001250': 0.01 },
    });
  });

  it('reports clashing condition, feature and source ids, and a merged prior sum of 1 or more', () => {
    const other = syntheticDocument('other');
    const clashing: KbDocument = {
      ...other,
      manifest: {
        ...other.manifest,
        sources: [
          { id: 'synthetic-cohort', kind: 'cohort', citation: 'A different cohort' },
          other.manifest.sources[0]!,
        ],
      },
      conditions: [condition({ id: 'flu_like', prior: 0.1 }), condition({ id: 'new', prior: 0.8 })],
      features: [feature({ id: 'cough' }), feature({ id: 'fever', hpo: 'HP:0001945' })],
      links: [link({ condition: 'new', feature: 'cough' })],
    };
    const result = mergeKnowledgeBases([
      { label: 'first', knowledgeBase: kb(syntheticDocument()) },
      { label: 'second', knowledgeBase: kb(clashing) },
    ]);
    expect(result.ok).toBe(false);
    expect(result.problems.map((p) => [p.file, p.code, p.message])).toEqual([
      ['second', 'id-clash', 'source "synthetic-cohort" is cited differently in first and second'],
      ['second', 'id-clash', 'condition "flu_like" is defined in both first and second'],
      [
        'second',
        'id-clash',
        'feature "cough" is defined in both first and second without one HPO term to show it is one finding',
      ],
      [
        'first+second',
        'prior-sum',
        expect.stringMatching(/^the merged priors add up to 1\.001\d*, not below 1$/),
      ],
    ]);
  });

  it('skips the leak of a base with no scorable condition', () => {
    const definitions = syntheticDocument('definitions');
    const { leak: _leak, ...manifest } = definitions.manifest;
    const defs = kb({
      ...definitions,
      manifest,
      conditions: definitions.conditions.map((c) => ({
        ...c,
        prior: null,
        prior_source: null,
        prior_locator: null,
      })),
      links: [],
    });
    expect(defs.leak).toEqual({ default: 0, source: NO_LEAK_SOURCE, perFeature: { cough: 0.05 } });
    const result = mergeKnowledgeBases([
      { label: 'definitions', knowledgeBase: defs },
      { label: 'rare', knowledgeBase: kb(rareDocument()) },
    ]);
    expect(result.ok && result.knowledgeBase.leak).toEqual({
      default: 0.01,
      source: SYNTHETIC_SOURCE,
      perFeature: { cough: 0.05 },
    });
    expect(result.ok && result.knowledgeBase.links.map((l) => l.feature)).toEqual(['fever', 'HP:0001250']);
  });

  describe('from directories', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'kb-merge-'));
      await writeKbDocument(join(dir, 'primary'), syntheticDocument());
      await writeKbDocument(join(dir, 'rare'), rareDocument());
      const broken = rareDocument();
      await writeKbDocument(join(dir, 'broken'), {
        ...broken,
        links: [link({ condition: 'nobody', feature: 'HP:0001250' })],
      });
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('loads several bases as one, with each base’s report', async () => {
      const result = await loadKnowledgeBases([join(dir, 'primary'), join(dir, 'rare')], {
        id: 'all',
        version: '1',
      });
      expect(result.problems).toEqual([]);
      expect(result.ok && result.knowledgeBase.id).toBe('all');
      expect(result.reports.map((r) => [r.id, r.conditions.scorable])).toEqual([
        ['synthetic', 2],
        ['rare', 2],
      ]);
    });

    it('reports the problems of every base before merging', async () => {
      const result = await loadKnowledgeBases([join(dir, 'primary'), join(dir, 'broken')]);
      expect(result.ok).toBe(false);
      expect(result.problems.map((p) => [p.file, p.row, p.code])).toEqual([
        ['broken/links.csv', 2, 'unknown-condition'],
      ]);
    });
  });
});
