import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import type { KbFeature } from '../../services/reasoning/src/domain/types.js';
import { foldTerm } from '../../services/reasoning/src/extract/text.js';
import { loadKnowledgeBase } from '../../services/reasoning/src/kb/index.js';
import { extractRuleFindings } from '../../services/reasoning/src/extract/index.js';
import {
  FeatureIndex,
  mapExtracted,
  mapped,
  mapStructured,
  withImplied,
  type MappedFinding,
} from '../../services/reasoning/src/pipeline/clinical-map.js';
import { seeded } from './fixtures/synthetic-kb.js';

// The clinical map's name lookup: a base's own labels and synonyms, then the extractor's lexicon,
// through any term of the lexicon entry (the base may name the finding with another of its terms).

const feature = (
  id: string,
  label_en: string,
  label_vi: string | null,
  synonyms: string[] = [],
): KbFeature => ({
  id,
  kind: 'sign',
  label_en,
  label_vi,
  hpo: null,
  synonyms,
});

describe('FeatureIndex.lookup', () => {
  const index = new FeatureIndex(
    new Map([
      ['nuchal_rigidity', feature('nuchal_rigidity', 'Nuchal rigidity', 'Cứng gáy', ['cổ cứng'])],
      ['dyspnea', feature('dyspnea', 'Dyspnea', 'Khó thở')],
    ]),
  );

  it('finds a feature by id, label and synonym, with or without diacritics', () => {
    expect(index.lookup('nuchal_rigidity')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('Nuchal Rigidity')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('co cung')?.id).toBe('nuchal_rigidity');
  });

  it('reaches the base through any term of the lexicon entry', () => {
    // "neck stiffness" is the lexicon entry's name; the base knows only its term "nuchal rigidity".
    expect(index.lookup('neck stiffness')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('stiff neck')?.id).toBe('nuchal_rigidity');
    expect(index.lookup('gáy cứng')?.id).toBe('nuchal_rigidity');
  });

  it('finds nothing for a name neither the base nor the lexicon knows', () => {
    expect(index.lookup('itchy elbow')).toBeUndefined();
    expect(index.lookup('hepatomegaly')).toBeUndefined(); // in the lexicon, not in this base
  });
});

// Close matches of an unknown name (the 422's suggestions). The index finds them without measuring
// every term; `reference` is the definition, measuring every term, as the service did before.

/** Levenshtein distance over UTF-16 units, the whole table (comparisons: Math is slow under Jest). */
function levenshtein(a: string, b: string): number {
  let previous = Int32Array.from({ length: b.length + 1 }, (_, j) => j);
  let row = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const remove = (previous[j] ?? 0) + 1;
      const insert = (row[j - 1] ?? 0) + 1;
      const replace = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      const fewer = remove < insert ? remove : insert;
      row[j] = fewer < replace ? fewer : replace;
    }
    [previous, row] = [row, previous];
  }
  return previous[b.length] ?? 0;
}

/**
 * Every term scored: similarity (0 past a length ratio of 2), 0.75 for containment, at least 0.5;
 * features best first, then by id.
 */
function reference(terms: ReadonlyMap<string, string>, name: string): string[] {
  const query = foldTerm(name);
  if (query === '') return [];
  const best = new Map<string, number>();
  for (const [folded, feature] of terms) {
    const longer = Math.max(query.length, folded.length);
    let score =
      query === folded
        ? 1
        : Math.abs(query.length - folded.length) / longer > 0.5
          ? 0
          : 1 - levenshtein(query, folded) / longer;
    if (query.length >= 3 && (folded.includes(query) || query.includes(folded)))
      score = Math.max(score, 0.75);
    if (score >= 0.5 && (best.get(feature) ?? 0) < score) best.set(feature, score);
  }
  return [...best.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([feature]) => feature);
}

/** A base's names, folded, each with the first feature that has it (as the index keeps them). */
function foldedTerms(features: readonly KbFeature[]): Map<string, string> {
  const terms = new Map<string, string>();
  for (const f of features)
    for (const n of [f.id, f.id.replace(/_/g, ' '), f.label_en, f.label_vi ?? '', ...f.synonyms]) {
      const folded = foldTerm(n);
      if (folded !== '' && !terms.has(folded)) terms.set(folded, f.id);
    }
  return terms;
}

describe('FeatureIndex.closeMatches', () => {
  it('suggests what measuring every term suggests, on the shipped base and a larger one', async () => {
    const loaded = await loadKnowledgeBase(
      fileURLToPath(new URL('../../services/reasoning/kb/primary-care', import.meta.url)),
    );
    if (!loaded.ok) throw new Error('the shipped base does not load');
    const shipped = [...loaded.knowledgeBase.features.values()];
    const random = seeded(7);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const letters = Array.from('abcdefghijklmnopqrstuvwxyz ');
    const typo = (s: string): string => {
      const chars = Array.from(s);
      for (let n = 1 + Math.floor(random() * 3); n > 0; n--) {
        const at = Math.floor(random() * (chars.length + 1));
        const op = random();
        if (op < 0.33) chars.splice(at, 0, pick(letters));
        else if (op < 0.66) chars.splice(at, 1);
        else chars[at] = pick(letters);
      }
      return chars.join('');
    };
    const words = shipped.flatMap((f) => f.label_en.toLowerCase().split(' '));
    // A larger base: made-up features named with the shipped base's words, one-letter synonyms too.
    const larger = [
      ...shipped,
      ...Array.from({ length: 1500 }, (_, i) => {
        const label = Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(words)).join(' ');
        return feature(`made_up_${i}`, label, null, [
          random() < 0.05 ? pick(letters.slice(0, 8)) : typo(label),
        ]);
      }),
    ];
    for (const [features, samples] of [
      [shipped, 120],
      [larger, 40],
    ] as const) {
      const index = new FeatureIndex(new Map(features.map((f) => [f.id, f])));
      const terms = foldedTerms(features);
      const names = features.flatMap((f) => [
        f.label_en,
        ...(f.label_vi === null ? [] : [f.label_vi]),
        ...f.synonyms,
      ]);
      const queries = [
        'feverr',
        'zzzz qqqq',
        'a',
        'ab',
        'rigidity',
        'dau nguc trai',
        'chest pian',
        ...Array.from({ length: 3 * samples }, () => typo(pick(names))),
        ...Array.from({ length: samples }, () => {
          const n = pick(names);
          const from = Math.floor(random() * n.length);
          return n.slice(from, from + 1 + Math.floor(random() * 12));
        }),
        ...Array.from({ length: samples }, () =>
          Array.from({ length: 2 + Math.floor(random() * 3) }, () => pick(words)).join(' '),
        ),
        ...Array.from({ length: samples }, () =>
          Array.from({ length: 1 + Math.floor(random() * 10) }, () => pick(letters)).join(''),
        ),
      ];
      let suggested = 0;
      for (const q of queries) {
        const all = reference(terms, q);
        for (const limit of [1, 5, 20]) {
          const found = index.closeMatches(q, limit).map((c) => c.feature);
          expect([q, limit, found]).toEqual([q, limit, all.slice(0, limit)]);
          suggested += found.length;
        }
      }
      expect(suggested).toBeGreaterThan(queries.length);
    }
  });

  it('keeps the suggestions the API shows', () => {
    const index = new FeatureIndex(
      new Map([
        ['fever', feature('fever', 'Fever', 'Sốt')],
        ['nuchal_rigidity', feature('nuchal_rigidity', 'Nuchal rigidity', 'Cứng gáy', ['cổ cứng'])],
        ['dyspnea', feature('dyspnea', 'Dyspnea', 'Khó thở')],
      ]),
    );
    expect(index.closeMatches('feverr')).toEqual([{ feature: 'fever', label_en: 'Fever' }]);
    expect(index.closeMatches('rigidity')).toEqual([
      { feature: 'nuchal_rigidity', label_en: 'Nuchal rigidity' },
    ]);
    expect(index.closeMatches('kho tho nhieu')).toEqual([{ feature: 'dyspnea', label_en: 'Dyspnea' }]);
    expect(index.closeMatches('zzzz qqqq')).toEqual([]);
  });

  it('answers 200 unknown names against 60,000 terms in seconds, not minutes', () => {
    // The audit's shape: 20,000 features of three random names each. Measuring every term took
    // 161 s for this (about 0.8 s a name); the index about 1 s here.
    const random = seeded(11);
    const text = (length: number): string =>
      Array.from({ length }, () => 'abcdefghijklmnopqrstuvwxyz '[Math.floor(random() * 27)]).join('');
    const features = new Map<string, KbFeature>();
    for (let i = 0; i < 20_000; i++) {
      const id = `HP:${String(i).padStart(7, '0')}`;
      features.set(id, {
        ...feature(id, text(15 + Math.floor(random() * 20)), null, [text(20), text(25)]),
        hpo: id,
      });
    }
    const index = new FeatureIndex(features);
    const unknown = Array.from({ length: 200 }, () => ({ feature: text(24), present: true, certainty: 1 }));
    const started = performance.now();
    let issues: readonly unknown[] = [];
    try {
      mapStructured(index, unknown);
    } catch (error) {
      issues = (error as { issues: readonly unknown[] }).issues;
    }
    const elapsed = performance.now() - started;
    expect(issues).toHaveLength(200);
    expect(elapsed).toBeLessThan(10_000);
    // And a misspelt name among them is still found.
    const [label] = [...features.values()].map((f) => f.label_en);
    const misspelt = `${label?.slice(0, 5) ?? ''}x${label?.slice(6) ?? ''}`;
    expect(index.closeMatches(misspelt)[0]?.label_en).toBe(label);
  });
});

describe('withImplied', () => {
  const features = new Map<string, KbFeature>([
    ['cough', feature('cough', 'Cough', 'Ho')],
    [
      'productive_cough',
      { ...feature('productive_cough', 'Productive cough', 'Ho có đờm'), implies: 'cough' },
    ],
    [
      'rusty_sputum',
      { ...feature('rusty_sputum', 'Rusty sputum', 'Đờm rỉ sắt'), implies: 'productive_cough' },
    ],
  ]);
  const index = new FeatureIndex(features);
  const finding = (id: string, present: boolean): MappedFinding =>
    mapped(features.get(id)!, {
      present,
      certainty: 0.75,
      origin: 'rules',
      span: { start: 0, end: 3, text: 'x' },
      value: null,
      unit: null,
    });

  it('adds the general findings a present one implies, up the chain, with its certainty and span', () => {
    const out = withImplied(index, [finding('rusty_sputum', true)]);
    expect(out.map((f) => [f.feature, f.present, f.certainty, f.span?.start])).toEqual([
      ['rusty_sputum', true, 0.75, 0],
      ['productive_cough', true, 0.75, 0],
      ['cough', true, 0.75, 0],
    ]);
  });

  it('leaves a reported general finding as reported, and implies nothing from an absence', () => {
    expect(withImplied(index, [finding('productive_cough', true), finding('cough', false)]).length).toBe(2);
    expect(withImplied(index, [finding('productive_cough', false)]).map((f) => f.feature)).toEqual([
      'productive_cough',
    ]);
  });
});

describe('published cut-offs of features named by id', () => {
  const ids = [
    'elevated_blood_pressure',
    'severely_elevated_blood_pressure',
    'low_hemoglobin',
    'high_blood_glucose',
    'low_blood_glucose',
  ];
  const index = new FeatureIndex(
    new Map(ids.map((id) => [id, { ...feature(id, id, null), kind: 'vital' as const }])),
  );
  const read = (text: string) =>
    mapExtracted(index, extractRuleFindings(text).findings).findings.map((f) => [f.feature, f.present]);

  it('reads blood pressure, haemoglobin and glucose against their guideline cut-offs, in either glucose unit', () => {
    expect(read('HA 190/110 mmHg, Hb 8.2 g/dL, glucose 450 mg/dL.')).toEqual(
      expect.arrayContaining([
        ['elevated_blood_pressure', true],
        ['severely_elevated_blood_pressure', true],
        ['low_hemoglobin', true],
        ['high_blood_glucose', true],
        ['low_blood_glucose', false],
      ]),
    );
    expect(read('BP 128/80 mmHg, Hb 13.5 g/dL, glucose 3.1 mmol/L.')).toEqual(
      expect.arrayContaining([
        ['elevated_blood_pressure', false],
        ['severely_elevated_blood_pressure', false],
        ['low_hemoglobin', false],
        ['high_blood_glucose', false],
        ['low_blood_glucose', true],
      ]),
    );
  });
});
