import { describe, expect, it } from '@jest/globals';
import { AbbreviationTable } from '../../services/codesearch/src/domain/abbreviations.js';
import { fold, stem, tokenize } from '../../services/codesearch/src/domain/fold.js';
import { reciprocalRankFusion } from '../../services/codesearch/src/domain/fusion.js';
import { LexicalIndex, type IndexedCode } from '../../services/codesearch/src/domain/lexical-index.js';
import { applyOverlay } from '../../services/codesearch/src/domain/overlay.js';
import { parseCodeSet } from '../../services/codesearch/src/domain/parse-records.js';
import { TopN } from '../../services/codesearch/src/domain/top-n.js';
import type { CodeRecord } from '../../services/codesearch/src/schemas/code-record.js';

const rec = (
  code: string,
  title_en: string | null,
  title_vi: string | null = null,
  parent: string | null = null,
): CodeRecord => ({
  code,
  type: 'ICD10',
  title_en,
  title_vi,
  synonyms: [],
  parent,
});
const indexed = (r: CodeRecord): IndexedCode => ({ record: r, titleViSource: null, synonyms: r.synonyms });

describe('folding and tokens', () => {
  it('folds Vietnamese diacritics and đ, keeping offsets into the original', () => {
    expect(fold('Đái Tháo Đường')).toBe('dai thao duong');
    expect(fold('Nhồi máu cơ tim')).toBe('nhoi mau co tim');
    const text = 'Viêm phổi (cấp)';
    const tokens = tokenize(text);
    expect(tokens.map((t) => [t.term, text.slice(t.start, t.end)])).toEqual([
      ['viem', 'Viêm'],
      ['phoi', 'phổi'],
      ['cap', 'cấp'],
    ]);
    // Decomposed input (combining marks) gives the same terms.
    expect(tokenize('tăng'.normalize('NFD')).map((t) => t.term)).toEqual(['tang']);
  });

  it('stems English plurals alike in titles and queries', () => {
    expect(['infections', 'allergies', 'abscesses', 'virus', 'psoriasis', 'kidneys'].map(stem)).toEqual([
      'infection',
      'allergy',
      'abscess',
      'virus',
      'psoriasis',
      'kidney',
    ]);
  });
});

describe('lexical index', () => {
  const index = new LexicalIndex(
    [
      rec('I10', 'Essential (primary) hypertension', 'Tăng huyết áp vô căn'),
      rec('I95', 'Hypotension', 'Hạ huyết áp'),
      rec('E11', 'Type 2 diabetes mellitus', 'Đái tháo đường type 2'),
      rec('E11.9', 'Type 2 diabetes mellitus without complications', null, 'E11'),
    ].map(indexed),
  );
  const abbreviations = new AbbreviationTable([
    { abbreviation: 'THA', expansions: [{ lang: 'vi', text: 'tăng huyết áp' }] },
    { abbreviation: 'ĐTĐ', expansions: [{ lang: 'vi', text: 'đái tháo đường' }] },
  ]);
  const top = (q: string): string[] =>
    index
      .search(index.analyze(q, abbreviations), new Set(['ICD10']), 10)
      .map((h) => index.docs[h.doc]!.record.code);

  it('ranks the full match first, with or without diacritics, and through abbreviations', () => {
    expect(top('tăng huyết áp')[0]).toBe('I10');
    expect(top('tang huyet ap')[0]).toBe('I10');
    expect(top('THA')[0]).toBe('I10');
    expect(top('đtđ')[0]).toBe('E11');
    expect(top('diabet')).toEqual(['E11', 'E11.9']);
    expect(top('E11.9')[0]).toBe('E11.9');
    expect(top('zzz')).toEqual([]);
  });

  it('filters by type and highlights what matched', () => {
    expect(index.search(index.analyze('hypertension', abbreviations), new Set(['CPT']), 10)).toEqual([]);
    const q = index.analyze('THA', abbreviations);
    expect(index.highlight('Tăng huyết áp vô căn', q).map((s) => [s.text, s.via])).toEqual([
      ['Tăng', 'abbreviation'],
      ['huyết', 'abbreviation'],
      ['áp', 'abbreviation'],
    ]);
  });
});

describe('code set files', () => {
  it('reads quoted CSV fields and reports every bad line', () => {
    const ok = parseCodeSet(
      'code,title_vi,title_en,synonyms\nA1,"Đau, sốt","Pain, fever",a|b\n',
      'csv',
      'ICPC2',
    );
    expect(ok.errors).toEqual([]);
    expect(ok.records[0]).toMatchObject({
      code: 'A1',
      title_vi: 'Đau, sốt',
      synonyms: ['a', 'b'],
      type: 'ICPC2',
    });
    const bad = parseCodeSet('code,title_en\nA1,x\nA1,y\n,z\nB2\n', 'csv', 'ICPC2');
    expect(bad.errors.map((e) => e.line)).toEqual([3, 4, 5]);
    expect(parseCodeSet('id,name\n1,x\n', 'csv', 'CPT').errors[0]?.message).toMatch(/unknown: id, name/);
    expect(parseCodeSet('', 'jsonl', 'CPT').errors[0]?.message).toMatch(/no codes/);
  });

  it('lays curated Vietnamese terms over codes without a Vietnamese title only', () => {
    const { codes, unmatched } = applyOverlay(
      [rec('I10', 'Essential hypertension'), rec('E11', 'Type 2 DM', 'ĐTĐ type 2 (official)')],
      [
        { type: 'ICD10', code: 'I10', titleVi: 'Tăng huyết áp', synonyms: ['cao huyết áp'] },
        { type: 'ICD10', code: 'E11', titleVi: 'Đái tháo đường type 2', synonyms: [] },
        { type: 'ICD10', code: 'Q99.9', titleVi: 'x', synonyms: [] },
      ],
    );
    expect(codes[0]).toMatchObject({
      titleViSource: 'curated',
      record: { title_vi: 'Tăng huyết áp' },
      synonyms: ['cao huyết áp'],
    });
    expect(codes[1]).toMatchObject({
      titleViSource: 'import',
      record: { title_vi: 'ĐTĐ type 2 (official)' },
    });
    expect(unmatched.map((u) => u.code)).toEqual(['Q99.9']);
  });
});

describe('fusion', () => {
  it('fuses ranks by 1/(60 + rank) and keeps both ranks', () => {
    const fused = reciprocalRankFusion([1, 2, 3], [3, 4], 10, (a, b) => a - b);
    expect(fused[0]).toMatchObject({ doc: 3, lexicalRank: 3, semanticRank: 1 });
    expect(fused[0]?.score).toBeCloseTo(1 / 63 + 1 / 61, 10);
    expect(fused.map((f) => f.doc)).toEqual([3, 1, 2, 4]);
  });

  it('TopN keeps the best, ties in the given order', () => {
    const top = new TopN(3, (a, b) => a - b);
    [5, 1, 9, 3, 7, 9].forEach((s, i) => top.push(i, s));
    expect(top.result().map((r) => r.id)).toEqual([2, 5, 4]);
  });
});
