import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  checkKbTexts,
  KB_FILES,
  loadKnowledgeBase,
  loadKnowledgeBaseOrThrow,
  parseCsv,
  parseKbTexts,
  readKbDocument,
  serializeKbDocument,
  writeCsv,
  writeKbDocument,
} from '../../services/reasoning/src/kb/index.js';
import { syntheticDocument } from './kb-helpers.js';

describe('CSV', () => {
  it('reads quoted fields, doubled quotes, line breaks inside quotes, CRLF, a BOM and blank lines', () => {
    const text = '\uFEFFa,b,c\r\n"x, y","say ""hi""","two\nlines"\r\n\r\n1,,3\n';
    const { records, errors } = parseCsv(text);
    expect(errors).toEqual([]);
    expect(records).toEqual([
      { line: 1, cells: ['a', 'b', 'c'] },
      { line: 2, cells: ['x, y', 'say "hi"', 'two\nlines'] },
      { line: 5, cells: ['1', '', '3'] },
    ]);
  });

  it('reports broken quoting with its line', () => {
    expect(parseCsv('a,b\n1,"open\n').errors).toEqual([
      { line: 2, message: 'a quoted field is never closed' },
    ]);
    expect(parseCsv('a,b\n1,x"y\n').errors[0]).toMatchObject({ line: 2 });
    expect(parseCsv('a,b\n1,"x"y\n').errors[0]).toMatchObject({ line: 2 });
  });

  it('writes what it reads back', () => {
    const rows = [
      ['id', 'text'],
      ['a', 'plain'],
      ['b', 'with, comma'],
      ['c', 'with "quote"'],
      ['d', ' padded '],
    ];
    const text = writeCsv(rows);
    expect(text).toBe('id,text\na,plain\nb,"with, comma"\nc,"with ""quote"""\nd," padded "\n');
    expect(parseCsv(text).records.map((r) => r.cells)).toEqual(rows);
  });
});

describe('knowledge-base format', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kb-format-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('round-trips a document through its four files exactly (numbers, quotes, synonyms, notes)', () => {
    const doc = syntheticDocument();
    const texts = serializeKbDocument(doc);
    const parsed = parseKbTexts(texts);
    expect(parsed.problems).toEqual([]);
    expect({
      manifest: parsed.manifest,
      conditions: parsed.conditions,
      features: parsed.features,
      links: parsed.links,
    }).toEqual(doc);
    // Canonical: writing the parsed rows again gives the same bytes.
    expect(serializeKbDocument({ ...doc, ...parsed, manifest: parsed.manifest! })).toEqual(texts);
    expect(texts.links.split('\n')[0]).toBe(
      'condition,feature,probability,source,specificity,locator,as_given,notes',
    );
    expect(texts.links).toContain('flu_like,cough,0.5384615384615384,synthetic-cohort,,,7/13,');
    expect(texts.features).toContain(
      'fever,symptom,Feature fever,Sốt,HP:0001945,Pyrexia|high temperature,sốt cao|nóng sốt',
    );
  });

  it('records the line of each row, counting line breaks inside quoted cells', () => {
    const parsed = parseKbTexts(serializeKbDocument(syntheticDocument()));
    expect(parsed.lines.features).toEqual([2, 3, 4]);
    expect(parsed.lines.links).toEqual([2, 3, 4, 5]);
  });

  it('writes a directory and loads it back into the KnowledgeBase the contract describes', async () => {
    const base = join(dir, 'synthetic');
    await writeKbDocument(base, syntheticDocument());
    const { knowledgeBase, report } = await loadKnowledgeBaseOrThrow(base);
    expect(knowledgeBase.id).toBe('synthetic');
    expect(knowledgeBase.sources).toEqual([
      { id: 'synthetic-test-numbers', citation: 'Synthetic numbers written for the tests' },
      {
        id: 'synthetic-cohort',
        citation: 'A synthetic cohort, table 2',
        url: 'https://example.org/cohort',
        licence: 'CC0',
      },
    ]);
    expect(knowledgeBase.conditions).toEqual([
      {
        id: 'flu_like',
        icd10: 'J11.1',
        title_en: 'Condition flu_like',
        title_vi: 'Cúm',
        prior: 0.2,
        prior_source: 'synthetic-test-numbers',
        prior_locator: 'table 1',
      },
      {
        id: 'OMIM:100000',
        icd10: null,
        title_en: 'Rare, "quoted" syndrome',
        title_vi: null,
        prior: 0.001,
        prior_source: 'synthetic-test-numbers',
      },
    ]);
    expect(knowledgeBase.features[0]).toEqual({
      id: 'fever',
      kind: 'symptom',
      label_en: 'Feature fever',
      label_vi: 'Sốt',
      hpo: 'HP:0001945',
      synonyms: ['Pyrexia', 'high temperature', 'sốt cao', 'nóng sốt'],
    });
    expect(knowledgeBase.links).toHaveLength(3);
    expect(knowledgeBase.links[1]).toEqual({
      condition: 'flu_like',
      feature: 'cough',
      probability: 7 / 13,
      source: 'synthetic-cohort',
    });
    expect(knowledgeBase.leak).toEqual({
      default: 0.02,
      source: 'synthetic-test-numbers',
      perFeature: { cough: 0.05 },
    });
    expect(report.conditions.notScorable).toEqual([
      {
        id: 'undefined_prior',
        title_en: 'Condition undefined_prior',
        icd10: null,
        reason: 'no sourced prior',
      },
    ]);
    expect(report.links).toEqual({ defined: 4, used: 3, dropped: 1 });
    expect(report.priorSum).toBeCloseTo(0.201, 12);
    expect(report.numbersBySource).toEqual({ 'synthetic-cohort': 2, 'synthetic-test-numbers': 6 });
    expect(report.modellingChoices).toEqual(['synthetic-test-numbers']);
    const reread = await readKbDocument(base);
    expect(reread.problems).toEqual([]);
    expect(reread.conditions).toEqual(syntheticDocument().conditions);
  });

  it('accepts a header without the optional columns and in another order; rejects unknown and missing ones', () => {
    const texts = serializeKbDocument(syntheticDocument());
    const links = 'source,probability,feature,condition\nsynthetic-test-numbers,0.4,fever,flu_like\n';
    const ok = checkKbTexts({ ...texts, links });
    expect(ok.ok && ok.knowledgeBase.links).toEqual([
      { condition: 'flu_like', feature: 'fever', probability: 0.4, source: 'synthetic-test-numbers' },
    ]);
    const bad = checkKbTexts({ ...texts, links: 'condition,feature,probabilty,source\n' });
    expect(bad.problems).toEqual([
      expect.objectContaining({ file: 'links.csv', row: 1, column: 'probabilty', code: 'bad-header' }),
      expect.objectContaining({ file: 'links.csv', row: 1, column: 'probability', code: 'bad-header' }),
    ]);
  });

  it('reports missing files and a manifest that is not JSON, naming the base directory', async () => {
    const base = join(dir, 'broken');
    await writeKbDocument(base, syntheticDocument());
    await writeFile(join(base, KB_FILES.manifest), '{ not json');
    await rm(join(base, KB_FILES.links));
    const result = await loadKnowledgeBase(base);
    expect(result.ok).toBe(false);
    expect(result.problems.map((p) => [p.file, p.code])).toEqual([
      ['broken/kb.json', 'bad-manifest'],
      ['broken/links.csv', 'file-missing'],
    ]);
    await expect(loadKnowledgeBaseOrThrow(base)).rejects.toThrow(/broken\/kb\.json bad-manifest: not JSON/);
    expect(await readFile(join(base, KB_FILES.conditions), 'utf8')).toContain('flu_like');
  });
});
