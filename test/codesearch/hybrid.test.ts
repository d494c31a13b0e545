/** @jest-environment ./test/face/ort-environment.cjs */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  QUERY_TABLE,
  ensureCodesearchModels,
  importTableSlice,
  rankOf,
  search,
  startCodesearch,
  waitForModel,
  type CodesearchTestServer,
} from './helpers.js';

// Hybrid search with the real English embedding model (all-MiniLM-L6-v2, int8 ONNX, from PyPI;
// `CODESEARCH_EMBEDDER=minilm`, hybrid-e5.test.ts has the default multilingual one) over a
// slice of the real ICD-10-CM (every category plus the subdivisions of the table's answers), so the
// title vectors build in about a minute on two cores. Lay terms the titles do not contain are found
// through the embeddings; the lexical ranking alone misses them.

let srv: CodesearchTestServer;
let codes = 0;

beforeAll(async () => {
  await ensureCodesearchModels([
    'codesearch-icd10cm',
    'codesearch-embedder',
    'codesearch-embedder-tokenizer',
  ]);
  const slice = await importTableSlice('codesearch-hybrid-');
  codes = slice.codes;
  const { dataDir } = slice;
  srv = await startCodesearch({
    DATA_DIR: dataDir,
    CODESEARCH_BUILTIN_SETS: 'false',
    CODESEARCH_EMBED_BATCH: '64',
    CODESEARCH_EMBEDDER: 'minilm',
  });
  // The model loads in the background; then the vectors build.
  await waitForModel(srv, 100);
  await srv.service.catalog.vectorsSettled();
}, 600_000);
afterAll(() => srv.close());

const recall = async (hybrid: boolean) => {
  const ranks: Record<string, number | null> = {};
  for (const row of QUERY_TABLE.hybrid) {
    const { body } = await search(srv.url, { query: row.query, code_types: ['ICD10'], hybrid });
    expect(body.mode).toBe(hybrid ? 'hybrid' : 'lexical');
    ranks[row.query] = rankOf(
      body.results.map((r) => r.code),
      row.expect,
    );
  }
  const found = Object.values(ranks).filter((r) => r !== null).length;
  return { ranks, recall: found / QUERY_TABLE.hybrid.length };
};

describe('codesearch hybrid search (real MiniLM embeddings, real ICD-10-CM titles)', () => {
  it('runs hybrid once the vectors are built, and reports the model', async () => {
    const types = (await (await fetch(`${srv.url}/code_types`)).json()) as {
      types: { type: string; vectors: { state: string; total: number } }[];
      embedding_model: { loaded: boolean };
    };
    expect(types.embedding_model.loaded).toBe(true);
    expect(types.types[0]?.vectors).toMatchObject({ state: 'ready', total: codes });
    const { body } = await search(srv.url, { query: 'belly pain' });
    expect(body).toMatchObject({ mode: 'hybrid', mode_reason: null });
    // Abdominal and pelvic pain (R10.x): first by similarity, first once fused.
    expect(body.results[0]?.code).toMatch(/^R10/);
    expect(body.results[0]?.ranks.semantic).toBe(1);
    expect(body.results[0]?.similarity).toBeGreaterThan(0.5);
    const off = await search(srv.url, { query: 'belly pain', hybrid: false });
    expect(off.body).toMatchObject({ mode: 'lexical', mode_reason: 'hybrid: false was requested' });
  });

  it('finds lay terms through the embeddings that lexical search misses', async () => {
    const lexical = await recall(false);
    const hybrid = await recall(true);
    console.log(
      `recall@10 on ${QUERY_TABLE.hybrid.length} lay queries over ${codes} ICD-10-CM codes: ` +
        `lexical ${lexical.recall.toFixed(2)}, hybrid ${hybrid.recall.toFixed(2)}\n` +
        JSON.stringify({ lexical: lexical.ranks, hybrid: hybrid.ranks }),
    );
    // Measured here: lexical 5/17 (0.29), hybrid 9/17 (0.53; 7/17 before titles below the minimum
    // similarity were left out of the fusion); fusion loses none lexical found.
    expect(hybrid.recall).toBeGreaterThan(lexical.recall);
    expect(hybrid.recall).toBeGreaterThanOrEqual(0.35);
    for (const [query, rank] of Object.entries(lexical.ranks))
      if (rank !== null)
        expect({ query, hybrid: hybrid.ranks[query] }).toEqual({ query, hybrid: expect.any(Number) });
  });

  it('answers a query that matches nothing with no codes, not the nearest titles', async () => {
    // Measured over the full ICD-10-CM with MiniLM: such queries' nearest titles lie at cosine
    // 0.22-0.46 ("😀" → R05 Cough 0.28, "xyz123" → Q98.5 Karyotype 47,XYY 0.36, "hello" → R06.6
    // Hiccough 0.46); the lay terms the embeddings find score 0.68-0.87 for the right code.
    for (const query of ['😀', '?????', 'xyz123', 'qwerty', 'hello', 'zzzz', '!!!']) {
      const lexical = await search(srv.url, { query, code_types: ['ICD10'], hybrid: false });
      expect({ query, lexical: lexical.body.results }).toEqual({ query, lexical: [] });
      const { body } = await search(srv.url, { query, code_types: ['ICD10'] });
      expect(body.mode).toBe('hybrid');
      expect({ query, hybrid: body.results.map((r) => `${r.code} ${r.similarity}`) }).toEqual({
        query,
        hybrid: [],
      });
    }
    // A lay term found only through the embeddings still is.
    const { body } = await search(srv.url, { query: 'throwing up', code_types: ['ICD10'] });
    const vomiting = body.results.find((r) => r.code.startsWith('R11'));
    expect(vomiting).toMatchObject({ ranks: { lexical: null, semantic: expect.any(Number) } });
    expect(vomiting?.similarity).toBeGreaterThanOrEqual(0.5);
    // Every semantic match clears the minimum.
    for (const r of body.results)
      if (r.ranks.semantic !== null) expect(r.similarity).toBeGreaterThanOrEqual(0.5);
  });

  it('takes its minimum similarity from CODESEARCH_MIN_SIMILARITY(_UNMATCHED)', async () => {
    // The same store (its vectors cached) with no minimum: the nearest titles come back.
    const open = await startCodesearch({
      DATA_DIR: srv.dataDir,
      CODESEARCH_BUILTIN_SETS: 'false',
      CODESEARCH_EMBEDDER: 'minilm',
      CODESEARCH_MIN_SIMILARITY: '-1',
      CODESEARCH_MIN_SIMILARITY_UNMATCHED: '-1',
    });
    try {
      await waitForModel(open, 100);
      await open.service.catalog.vectorsSettled();
      const { body } = await search(open.url, { query: 'xyz123', code_types: ['ICD10'] });
      expect(body.mode).toBe('hybrid');
      expect(body.results.length).toBeGreaterThan(0);
      expect(body.results[0]?.similarity).toBeLessThan(0.5);
    } finally {
      await open.close();
    }
  }, 120_000);

  it('keeps the lexical table in the top 10 when fusing', async () => {
    let found = 0;
    const rows = QUERY_TABLE.lexical.filter((r) => r.type === 'ICD10');
    for (const row of rows) {
      const { body } = await search(srv.url, { query: row.query, code_types: ['ICD10'] });
      if (
        rankOf(
          body.results.map((r) => r.code),
          row.expect,
        ) !== null
      )
        found++;
    }
    console.log(
      `hybrid recall@10 on the ${rows.length}-query vi/en table: ${(found / rows.length).toFixed(3)}`,
    );
    // Measured 1.0: the three best lexical hits are always kept.
    expect(found / rows.length).toBeGreaterThanOrEqual(0.98);
  });
});
