import { describe, expect, it } from '@jest/globals';
import {
  checkKbTexts,
  formatProblem,
  KB_PROBLEM_CODES,
  NO_LEAK_SOURCE,
  serializeKbDocument,
  validateKb,
  type KbDocument,
  type KbProblem,
} from '../../services/reasoning/src/kb/index.js';
import { condition, feature, link, syntheticDocument } from './kb-helpers.js';

const where = (p: KbProblem) => [p.file, p.row, p.column, p.code];

describe('knowledge-base validation', () => {
  it('accepts the synthetic base', () => {
    expect(validateKb(syntheticDocument()).problems).toEqual([]);
  });

  it('lists every problem at once, each with its file, line and column', () => {
    const base = syntheticDocument();
    const doc: KbDocument = {
      manifest: {
        ...base.manifest,
        sources: [...base.manifest.sources, { id: 'synthetic-cohort', kind: 'review', citation: 'again' }],
        leak: { default: 1.5, source: 'nowhere' },
      },
      conditions: [
        condition({ id: 'a', icd10: 'A15.0', prior: 0.5 }), // line 2
        condition({ id: 'b', icd10: 'a150', prior: 0.6 }), // line 3: malformed ICD-10; priors now sum 1.1
        condition({ id: 'a', prior: 0.01 }), // line 4: duplicate
        condition({ id: 'c', prior: 0.05, prior_source: null }), // line 5: number without source
        condition({ id: 'd', prior: null, prior_source: 'synthetic-cohort' }), // line 6: source without number
        condition({ id: 'e', prior: 0, prior_source: 'synthetic-cohort' }), // line 7: outside (0, 1)
        condition({ id: 'f', prior: 0.01, prior_source: 'who-2099' }), // line 8: unknown source
      ],
      features: [
        feature({ id: 'fever', hpo: 'HP:0001945' }), // line 2
        feature({ id: 'pyrexia', hpo: 'HP:0001945' }), // line 3: same HPO term
        feature({ id: 'cough', hpo: 'HP:12735' }), // line 4: malformed HPO id
        feature({ id: 'fever' }), // line 5: duplicate
        feature({ id: 'rash', leak: 0.1 }), // line 6: leak without source
      ],
      links: [
        link({ condition: 'a', feature: 'fever' }), // line 2: fine
        link({ condition: 'zzz', feature: 'fever' }), // line 3: unknown condition
        link({ condition: 'a', feature: 'nausea' }), // line 4: unknown feature
        link({ condition: 'a', feature: 'fever', probability: 0.4 }), // line 5: duplicate link
        link({ condition: 'b', feature: 'fever', probability: 1 }), // line 6: outside (0, 1)
        link({ condition: 'b', feature: 'cough', source: null }), // line 7: number without source
        link({ condition: 'b', feature: 'rash', source: 'made-up' }), // line 8: unknown source
        link({ condition: 'b', feature: 'pyrexia', probability: null, source: null }), // line 9: nothing
      ],
    };
    const result = validateKb(doc, 'demo');
    expect(result.ok).toBe(false);
    expect(result.problems.map(where)).toEqual([
      ['demo/conditions.csv', null, 'prior', 'prior-sum'],
      ['demo/conditions.csv', 3, 'icd10', 'malformed-code'],
      ['demo/conditions.csv', 4, 'id', 'duplicate-id'],
      ['demo/conditions.csv', 5, 'prior', 'missing-source'],
      ['demo/conditions.csv', 6, 'prior', 'missing-number'],
      ['demo/conditions.csv', 7, 'prior', 'probability-range'],
      ['demo/conditions.csv', 8, 'prior', 'unknown-source'],
      ['demo/features.csv', 3, 'hpo', 'duplicate-hpo'],
      ['demo/features.csv', 4, 'hpo', 'malformed-code'],
      ['demo/features.csv', 5, 'id', 'duplicate-id'],
      ['demo/features.csv', 6, 'leak', 'missing-source'],
      ['demo/kb.json', null, 'sources[2].id', 'duplicate-id'],
      ['demo/kb.json', null, 'leak.default', 'probability-range'],
      ['demo/kb.json', null, 'leak.default', 'unknown-source'],
      ['demo/links.csv', 3, 'condition', 'unknown-condition'],
      ['demo/links.csv', 4, 'feature', 'unknown-feature'],
      ['demo/links.csv', 5, null, 'duplicate-id'],
      ['demo/links.csv', 6, 'probability', 'probability-range'],
      ['demo/links.csv', 7, 'probability', 'missing-source'],
      ['demo/links.csv', 8, 'probability', 'unknown-source'],
      ['demo/links.csv', 9, 'probability', 'missing-number'],
    ]);
    const lines = result.problems.map(formatProblem);
    expect(lines).toContain(
      'demo/conditions.csv:3 [icd10] malformed-code: "a150" is not an ICD-10 code (e.g. A15.0)',
    );
    expect(lines).toContain('demo/links.csv:5 duplicate-id: a → fever is already linked on line 2');
    expect(lines[0]).toMatch(/priors of the scorable conditions add up to 1\.1/);
  });

  it('reports shape problems from the files with their lines, and validates the rest of the rows too', () => {
    const texts = serializeKbDocument(syntheticDocument());
    const conditions = `${texts.conditions}bad id!,,Title,,0.1,synthetic-test-numbers,,\nx,,,,abc,synthetic-test-numbers,,\nshort,row\n`;
    const features = texts.features.replace('fever,symptom,', 'fever,smell,');
    const links = `${texts.links}x,cough,0.1,synthetic-test-numbers,,,,\nflu_like,fever,"0.5,synthetic-test-numbers,,,,\n`;
    const manifest = texts.manifest
      .replace('"kind": "cohort"', '"kind": "anecdote"')
      .replace('"title"', '"titel"');
    const result = checkKbTexts({ manifest, conditions, features, links }, 'demo');
    expect(result.problems.map(where)).toEqual([
      ['demo/conditions.csv', 5, 'id', 'bad-value'],
      ['demo/conditions.csv', 6, 'title_en', 'bad-value'],
      ['demo/conditions.csv', 6, 'prior', 'bad-value'],
      ['demo/conditions.csv', 7, null, 'bad-row'],
      ['demo/features.csv', 2, 'kind', 'bad-value'],
      ['demo/kb.json', null, 'title', 'bad-manifest'],
      ['demo/kb.json', null, 'sources[1].kind', 'bad-manifest'],
      ['demo/kb.json', null, null, 'bad-manifest'],
      // Line 7's quote is never closed: the rest of the file is one cell, so a row of 3 cells.
      ['demo/links.csv', 7, null, 'bad-row'],
      ['demo/links.csv', 7, null, 'bad-row'],
    ]);
    // Links to "x" (line 6) and to "fever" (lines 2 and 5) name rows left out for a bad cell:
    // defined, so not reported a second time as unknown.
    expect(result.problems.some((p) => p.code === 'unknown-condition' || p.code === 'unknown-feature')).toBe(
      false,
    );
  });

  it('keeps conditions without a sourced prior out of the base and lists them as not scorable', () => {
    const base = syntheticDocument();
    const { leak: _leak, ...manifest } = base.manifest;
    const doc: KbDocument = {
      ...base,
      manifest,
      conditions: base.conditions.map((c) => ({
        ...c,
        prior: null,
        prior_source: null,
        prior_locator: null,
      })),
      links: [],
    };
    const result = validateKb(doc);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.knowledgeBase.conditions).toEqual([]);
    expect(result.knowledgeBase.features).toHaveLength(3);
    expect(result.knowledgeBase.leak).toEqual({
      default: 0,
      source: NO_LEAK_SOURCE,
      perFeature: { cough: 0.05 },
    });
    expect(result.report.conditions.notScorable.map((c) => c.id)).toEqual([
      'flu_like',
      'OMIM:100000',
      'undefined_prior',
    ]);
    expect(result.report.priorSum).toBe(0);
  });

  it('needs a leak once a condition is scorable', () => {
    const base = syntheticDocument();
    const { leak: _leak, ...manifest } = base.manifest;
    const result = validateKb({ ...base, manifest });
    expect(result.problems.map(where)).toEqual([['kb.json', null, 'leak', 'leak-missing']]);
  });

  it('lists scorable conditions that no link describes', () => {
    const base = syntheticDocument();
    const result = validateKb({ ...base, links: base.links.filter((l) => l.condition !== 'OMIM:100000') });
    expect(result.ok && result.report.conditions.withoutLinks).toEqual(['OMIM:100000']);
  });

  it('has a documented code for every problem it can report', () => {
    expect(KB_PROBLEM_CODES).toEqual(
      expect.arrayContaining([
        'unknown-source',
        'missing-source',
        'probability-range',
        'prior-sum',
        'duplicate-id',
      ]),
    );
  });
});

describe('a link with a specificity', () => {
  it('carries it into the base, counts it as a number of its source, and writes it back', () => {
    const base = syntheticDocument();
    const doc: KbDocument = {
      ...base,
      links: base.links.map((l, i) => (i === 0 ? { ...l, specificity: 0.7 } : l)),
    };
    const result = validateKb(doc);
    expect(result.problems).toEqual([]);
    expect(result.knowledgeBase?.links[0]?.specificity).toBe(0.7);
    expect(result.knowledgeBase?.links[1]?.specificity).toBeUndefined();
    const before = validateKb(base).report!.numbersBySource[base.links[0]!.source!]!;
    expect(result.report!.numbersBySource[base.links[0]!.source!]).toBe(before + 1);
    const texts = serializeKbDocument(doc);
    expect(texts.links.split('\n')[0]).toBe(
      'condition,feature,probability,source,specificity,locator,as_given,notes',
    );
    expect(checkKbTexts(texts).knowledgeBase?.links[0]?.specificity).toBe(0.7);
  });

  it('refuses one outside (0, 1) or without a source, on its line and column', () => {
    const base = syntheticDocument();
    const doc: KbDocument = {
      ...base,
      links: base.links.map((l, i) =>
        i === 0
          ? { ...l, specificity: 1 }
          : i === 1
            ? { ...l, specificity: 0.8, probability: null, source: null }
            : l,
      ),
    };
    const problems = validateKb(doc).problems.map((p) => [p.row, p.column, p.code]);
    expect(problems).toContainEqual([2, 'specificity', 'probability-range']);
    expect(problems).toContainEqual([3, 'specificity', 'missing-source']);
  });

  it('reports how many numbers each evidence grade holds', () => {
    const report = validateKb(syntheticDocument()).report!;
    const total = Object.values(report.numbersBySource).reduce((a, b) => a + b, 0);
    const graded = Object.values(report.numbersByGrade).reduce((a, b) => a + b, 0);
    expect(graded).toBe(total);
    expect(Object.keys(report.numbersByGrade).sort()).toEqual(expect.arrayContaining(['modelling choice']));
  });
});

describe('a feature that implies another', () => {
  it('carries the link to the more general feature, and refuses an unknown one or a loop', () => {
    const base = syntheticDocument();
    const [first, second] = base.features;
    const ok = validateKb({
      ...base,
      features: base.features.map((f) => (f === second ? { ...f, implies: first!.id } : f)),
    });
    expect(ok.problems).toEqual([]);
    expect(ok.knowledgeBase?.features.find((f) => f.id === second!.id)?.implies).toBe(first!.id);
    const bad = validateKb({
      ...base,
      features: base.features.map((f) =>
        f === first ? { ...f, implies: second!.id } : f === second ? { ...f, implies: first!.id } : f,
      ),
    });
    expect(bad.problems.map((p) => [p.column, p.code])).toContainEqual(['implies', 'bad-value']);
    const unknown = validateKb({
      ...base,
      features: base.features.map((f) => (f === first ? { ...f, implies: 'nowhere' } : f)),
    });
    expect(unknown.problems.map((p) => [p.column, p.code])).toEqual([['implies', 'unknown-feature']]);
  });
});
