import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  QUERY_TABLE,
  ensureCodesearchModels,
  rankOf,
  search,
  startCodesearch,
  type CodesearchTestServer,
} from './helpers.js';

// The code search service in lexical mode over the real ICD-10-CM (46,881 codes) and ICD-10-PCS
// (68,982 codes) sets, fetched through the model store and imported at start.

let srv: CodesearchTestServer;

beforeAll(async () => {
  await ensureCodesearchModels();
  srv = await startCodesearch({ CODESEARCH_EMBEDDINGS: 'off', BODY_LIMIT: '4kb' });
}, 300_000);
afterAll(() => srv.close());

const get = async (path: string) => {
  const res = await fetch(`${srv.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('codesearch service (lexical, real ICD-10-CM and ICD-10-PCS)', () => {
  it('describes itself, is healthy, and reports the loaded sets', async () => {
    expect((await get('/')).body).toMatchObject({
      service: 'codesearch',
      port: 0,
      status: 'ready',
      docs: '/docs',
    });
    const health = await get('/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'healthy', types: ['ICD10', 'PROCEDURE'], mode: 'lexical' });
    const types = await get('/code_types');
    expect(types.body['missing_types']).toEqual(['ICPC2', 'CPT', 'SERVICE']);
    const byType = Object.fromEntries(
      (
        types.body['types'] as { type: string; count: number; source: string; curated_vi_titles: number }[]
      ).map((t) => [t.type, t]),
    );
    expect(byType['ICD10']).toMatchObject({ count: 46_881, source: 'model store: codesearch-icd10cm' });
    expect(byType['ICD10']?.curated_vi_titles).toBeGreaterThan(60);
    expect(byType['PROCEDURE']).toMatchObject({ count: 68_982, source: 'model store: codesearch-icd10pcs' });
    expect((await get('/gpu_status')).body).toMatchObject({ available: false });
    const status = await get('/status');
    expect(status.body).toMatchObject({ ready: true, codes: 46_881 + 68_982 });
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/codesearch_codes\{[^}]*type="ICD10"[^}]*\} 46881/);
    const openapi = (await get('/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/search', '/code_types', '/codes/{type}/{code}', '/health']),
    );
  });

  it.each(QUERY_TABLE.lexical)('finds $expect for "$query" ($kind) in the top 10', async (row) => {
    const { status, body } = await search(srv.url, { query: row.query, code_types: [row.type] });
    expect(status).toBe(200);
    expect(body.mode).toBe('lexical');
    const codes = body.results.map((r) => r.code);
    expect(codes.length).toBeLessThanOrEqual(10);
    expect({ query: row.query, rank: rankOf(codes, row.expect) }).toEqual({
      query: row.query,
      rank: expect.any(Number),
    });
  });

  it('says why it ran lexical only, and answers with titles, parent and highlights', async () => {
    const { body } = await search(srv.url, { query: 'THA', top_k: 3 });
    expect(body.mode).toBe('lexical');
    expect(body.mode_reason).toMatch(/embeddings are off/);
    expect(body.expansions).toEqual([{ abbreviation: 'THA', expansions: ['tăng huyết áp', 'hypertension'] }]);
    const top = body.results[0];
    expect(top).toMatchObject({
      code: 'I10',
      type: 'ICD10',
      title: 'Essential (primary) hypertension',
      title_en: 'Essential (primary) hypertension',
      title_vi: 'Tăng huyết áp vô căn (nguyên phát)',
      title_vi_source: 'curated',
      ranks: { lexical: 1, semantic: null },
      similarity: null,
    });
    const en = top?.highlights.find((h) => h.field === 'title_en');
    expect(en?.spans).toEqual([
      { start: 20, end: 32, text: 'hypertension', query_term: 'THA', via: 'abbreviation' },
    ]);
    const folded = await search(srv.url, { query: 'tang huyet ap', top_k: 1 });
    const vi = folded.body.results[0]?.highlights.find((h) => h.field === 'title_vi');
    expect(vi?.spans.map((s) => [s.text, s.query_term, s.via])).toEqual([
      ['Tăng', 'tang', 'exact'],
      ['huyết', 'huyet', 'exact'],
      ['áp', 'ap', 'exact'],
    ]);
    const child = await search(srv.url, {
      query: 'type 2 diabetes mellitus without complications',
      top_k: 1,
    });
    expect(child.body.results[0]).toMatchObject({
      code: 'E11.9',
      parent: { code: 'E11', title: 'Type 2 diabetes mellitus' },
    });
  });

  it('reports requested types with no codes, never an unexplained empty answer', async () => {
    const cpt = await search(srv.url, { query: 'office visit', code_types: ['CPT'] });
    expect(cpt.status).toBe(200);
    expect(cpt.body).toMatchObject({ code_types: [], missing_types: ['CPT'], results: [] });
    expect(cpt.body.warnings[0]).toMatch(/No CPT codes are loaded.*cli\.js import --type CPT/);
    expect(cpt.body.mode_reason).toMatch(/no codes of the requested types/);
    const mixed = await search(srv.url, { query: 'asthma', code_types: ['ICD10', 'ICPC2'] });
    expect(mixed.body.missing_types).toEqual(['ICPC2']);
    expect(mixed.body.results[0]?.code).toBe('J45');
    const all = await search(srv.url, { query: 'asthma' });
    expect(all.body.missing_types).toEqual(['ICPC2', 'CPT', 'SERVICE']);
  });

  it('looks up one code with its hierarchy', async () => {
    const e119 = await get('/codes/ICD10/e119');
    expect(e119.status).toBe(200);
    expect(e119.body).toMatchObject({
      code: 'E11.9',
      title_en: 'Type 2 diabetes mellitus without complications',
      parent: { code: 'E11' },
      ancestors: [{ code: 'E11', title: 'Type 2 diabetes mellitus' }],
      children_count: 0,
    });
    const e11 = await get('/codes/ICD10/E11');
    expect(e11.body['children_count']).toBeGreaterThan(5);
    const pcs = await get('/codes/PROCEDURE/0DTJ4ZZ');
    expect(pcs.body).toMatchObject({ parent: { code: '0DT' } });
    expect((await get('/codes/ICD10/Z99.999')).status).toBe(404);
    const cpt = await get('/codes/CPT/99213');
    expect(cpt.status).toBe(404);
    expect(JSON.stringify(cpt.body)).toMatch(/No CPT codes are loaded/);
    expect((await get('/codes/XYZ/1')).status).toBe(422);
  });

  it('answers bad input with the right status and the failing fields', async () => {
    const bad = await fetch(`${srv.url}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ top_k: 0, code_types: ['ICD9'], hybrid: 'yes' }),
    });
    expect(bad.status).toBe(422);
    const detail = ((await bad.json()) as { detail: { loc: (string | number)[] }[] }).detail;
    expect(detail.map((d) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.query', 'body.top_k', 'body.code_types.0', 'body.hybrid']),
    );
    const extra = await search(srv.url, { query: 'x', unknown_field: 1 });
    expect(extra.status).toBe(422);
    const tooMany = await search(srv.url, { query: 'x', top_k: 101 });
    expect(tooMany.status).toBe(422);
    const malformed = await fetch(`${srv.url}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query": ',
    });
    expect(malformed.status).toBe(400);
    const form = await fetch(`${srv.url}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'query=asthma',
    });
    expect(form.status).toBe(415);
    const big = await search(srv.url, { query: 'a'.repeat(5000) });
    expect(big.status).toBe(413);
  });

  it('never logs the query text', async () => {
    const secret = 'bệnh nhân Nguyễn Văn Bí Mật tăng huyết áp';
    await search(srv.url, { query: secret });
    const text = JSON.stringify(srv.logs);
    expect(text).not.toContain('Bí Mật');
    expect(text).not.toContain('Bi Mat');
  });

  it('runs lexical searches over the full sets with p50 under 5 ms', () => {
    const snap = srv.service.catalog.snapshot;
    if (snap === undefined) throw new Error('not loaded');
    const { index } = snap;
    const types = new Set(['ICD10', 'PROCEDURE'] as const);
    const times: number[] = [];
    for (let round = 0; round < 20; round++) {
      for (const row of QUERY_TABLE.lexical) {
        const t0 = performance.now();
        index.search(index.analyze(row.query, srv.service.abbreviations), types, 10);
        times.push(performance.now() - t0);
      }
    }
    times.sort((a, b) => a - b);
    const p50 = times[Math.floor(times.length / 2)] ?? Infinity;
    const p95 = times[Math.floor(times.length * 0.95)] ?? Infinity;
    console.log(
      `lexical search over ${index.size} codes: p50 ${p50.toFixed(3)} ms, p95 ${p95.toFixed(3)} ms`,
    );
    expect(p50).toBeLessThan(5);
  });
});
