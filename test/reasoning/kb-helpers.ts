/**
 * A small knowledge-base document for the kb tests. SYNTHETIC: its numbers are made up for the
 * tests and cite a synthetic source; it is never shipped as a knowledge base.
 */
import type { ConditionRow, FeatureRow, KbDocument, LinkRow } from '../../services/reasoning/src/kb/index.js';

export const SYNTHETIC_SOURCE = 'synthetic-test-numbers';

export const condition = (over: Partial<ConditionRow> & { id: string }): ConditionRow => ({
  icd10: null,
  title_en: `Condition ${over.id}`,
  title_vi: null,
  prior: 0.1,
  prior_source: SYNTHETIC_SOURCE,
  prior_locator: null,
  notes: null,
  ...over,
});

export const feature = (over: Partial<FeatureRow> & { id: string }): FeatureRow => ({
  kind: 'symptom',
  label_en: `Feature ${over.id}`,
  label_vi: null,
  hpo: null,
  synonyms_en: [],
  synonyms_vi: [],
  leak: null,
  leak_source: null,
  leak_locator: null,
  implies: null,
  notes: null,
  ...over,
});

export const link = (over: Partial<LinkRow> & { condition: string; feature: string }): LinkRow => ({
  probability: 0.5,
  specificity: null,
  source: SYNTHETIC_SOURCE,
  locator: null,
  as_given: null,
  notes: null,
  ...over,
});

export function syntheticDocument(id = 'synthetic'): KbDocument {
  return {
    manifest: {
      format: 'clinicalsuite-kb/1',
      id,
      version: '1.0.0',
      title: 'Synthetic test base (made-up numbers)',
      description: 'SYNTHETIC: for tests only, "quoted", with a comma',
      sources: [
        {
          id: SYNTHETIC_SOURCE,
          kind: 'modelling-choice',
          citation: 'Synthetic numbers written for the tests',
        },
        {
          id: 'synthetic-cohort',
          kind: 'cohort',
          citation: 'A synthetic cohort, table 2',
          url: 'https://example.org/cohort',
          licence: 'CC0',
        },
      ],
      leak: { default: 0.02, source: SYNTHETIC_SOURCE, locator: 'test leak' },
    },
    conditions: [
      condition({ id: 'flu_like', icd10: 'J11.1', title_vi: 'Cúm', prior: 0.2, prior_locator: 'table 1' }),
      condition({ id: 'OMIM:100000', title_en: 'Rare, "quoted" syndrome', prior: 0.001 }),
      condition({ id: 'undefined_prior', prior: null, prior_source: null, notes: 'waiting for a source' }),
    ],
    features: [
      feature({
        id: 'fever',
        hpo: 'HP:0001945',
        label_vi: 'Sốt',
        synonyms_en: ['Pyrexia', 'high temperature'],
        synonyms_vi: ['sốt cao', 'nóng sốt'],
      }),
      feature({
        id: 'cough',
        hpo: 'HP:0012735',
        leak: 0.05,
        leak_source: 'synthetic-cohort',
        leak_locator: 'p. 3',
      }),
      feature({ id: 'thrombocytopenia', kind: 'lab', hpo: 'HP:0001873', notes: 'multi\nline note' }),
    ],
    links: [
      link({
        condition: 'flu_like',
        feature: 'fever',
        probability: 0.9,
        locator: 'table 2, row 1',
        as_given: '90%',
      }),
      link({
        condition: 'flu_like',
        feature: 'cough',
        probability: 7 / 13,
        source: 'synthetic-cohort',
        as_given: '7/13',
      }),
      link({ condition: 'OMIM:100000', feature: 'thrombocytopenia', probability: 1e-7 }),
      link({ condition: 'undefined_prior', feature: 'fever', probability: 0.3 }),
    ],
  };
}
