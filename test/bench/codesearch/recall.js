// The code search service's recall on bilingual clinical queries, by hand (build first: `npx tsc -b
// services/codesearch`): `npm run bench:codesearch-recall` (or `node
// test/bench/codesearch/recall.js [--verbose]`).
//
// Starts the built service (dist/main.js) on a free loopback port over the real ICD-10-CM set with
// the configured embedding model (default: the manifest's multilingual-e5-small;
// CODESEARCH_EMBEDDER=minilm for all-MiniLM-L6-v2), waits until the ICD-10 title
// vectors are built (cached in the data dir; ~90 s on 2 idle cores the first time, see
// services/codesearch/README.md), checks that every expected code of
// test/bench/codesearch/queries.json exists (`GET /codes/ICD10/{code}`), then runs every query,
// over a real socket, in three modes and prints recall@10 per language and mode:
//   - lexical: `hybrid: false`, top 10;
//   - semantic: the embeddings' own ranking as the service computes it (nearest titles at or above
//     CODESEARCH_MIN_SIMILARITY): the API has no semantic-only mode, so this is read from a hybrid
//     answer of top_k 100 (every result carries `ranks.semantic`), keeping the results with a
//     semantic rank of 1..10. A semantic rank missing below one that is present (fused out of the
//     100) is counted and printed, so an incomplete list never passes silently;
//   - hybrid: `hybrid: true`, top 10, the service's answer as served.
// A query is a hit when a returned code, dots removed, starts with one of its expected prefixes
// (queries.json says so in `matching`). `--verbose` prints each mode's misses with the top 3 codes.
// It also prints each mode's latency over the socket (p50 and p95 of the top-10 searches).
//
// Env: BENCH_DATA_DIR ($CLINICALSUITE_HOME/codesearch/recall-data: the vectors are cached there,
// per model), BENCH_THREADS (2: the embedder's threads), BENCH_WAIT_VECTORS_S (2400),
// BENCH_JSON (a path: also write the figures and misses there as JSON). Another embedder: set the
// service's own CODESEARCH_EMBEDDER, CODESEARCH_EMBEDDING_MODEL_PATH,
// CODESEARCH_EMBEDDING_TOKENIZER_PATH, CODESEARCH_EMBEDDING_QUERY_PREFIX / _PASSAGE_PREFIX,
// CODESEARCH_MIN_SIMILARITY and CODESEARCH_FUSION, which the service inherits.
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startBenchCodesearch } from './service.js';

const root = new URL('../../../', import.meta.url).pathname;
const home = process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite');
const DATA_DIR = process.env.BENCH_DATA_DIR ?? join(home, 'codesearch', 'recall-data');
const WAIT_S = Number(process.env.BENCH_WAIT_VECTORS_S ?? '2400');
const THREADS = process.env.BENCH_THREADS ?? '2';
const VERBOSE = process.argv.includes('--verbose');
const K = 10;
const set = JSON.parse(readFileSync(join(root, 'test/bench/codesearch/queries.json'), 'utf8'));
const queries = set.queries;

const { json, model, stop } = await startBenchCodesearch({
  dataDir: DATA_DIR,
  threads: THREADS,
  waitS: WAIT_S,
  sets: ['codesearch-icd10cm'],
  env: { CODESEARCH_EMBED_TYPES: 'ICD10' },
});

const norm = (c) => c.replace(/\./g, '').toUpperCase();
const unknown = [];
for (const code of new Set(queries.flatMap((q) => q.expect))) {
  const { status } = await json(`/codes/ICD10/${encodeURIComponent(code)}`);
  if (status !== 200) unknown.push(`${code} (HTTP ${status})`);
}
if (unknown.length > 0) throw new Error(`expected codes not in ICD-10-CM: ${unknown.join(', ')}`);

const took = { lexical: [], hybrid: [] };
const search = async (query, hybrid, topK) => {
  const t0 = performance.now();
  const { status, body } = await json('/search', { query, code_types: ['ICD10'], top_k: topK, hybrid });
  if (topK === K) took[hybrid ? 'hybrid' : 'lexical'].push(performance.now() - t0);
  if (status !== 200) throw new Error(`${query}: HTTP ${status} ${JSON.stringify(body)}`);
  return body;
};

const MODES = ['lexical', 'semantic', 'hybrid'];
const rows = [];
let incomplete = 0;
let notHybrid = 0;
for (const q of queries) {
  const lexical = await search(q.query, false, K);
  const hybrid = await search(q.query, true, K);
  const wide = await search(q.query, true, 100);
  if (hybrid.mode !== 'hybrid' || wide.mode !== 'hybrid') notHybrid++;
  const semantic = wide.results
    .filter((r) => r.ranks.semantic !== null && r.ranks.semantic <= K)
    .sort((a, b) => a.ranks.semantic - b.ranks.semantic);
  if (semantic.some((r, i) => r.ranks.semantic !== i + 1)) incomplete++;
  const lists = {
    lexical: lexical.results.map((r) => r.code),
    semantic: semantic.map((r) => r.code),
    hybrid: hybrid.results.map((r) => r.code),
  };
  const prefixes = q.expect.map(norm);
  const hit = (codes) => codes.slice(0, K).some((c) => prefixes.some((p) => norm(c).startsWith(p)));
  rows.push({ ...q, lists, hits: Object.fromEntries(MODES.map((m) => [m, hit(lists[m])])) });
}

const langs = [...new Set(queries.map((q) => q.lang))];
const groups = [
  ...langs.map((l) => [l, rows.filter((r) => r.lang === l)]),
  ['vi + vi-nodiac', rows.filter((r) => r.lang.startsWith('vi'))],
  ['all', rows],
];
const table = groups.map(([name, rs]) => ({
  group: name,
  queries: rs.length,
  ...Object.fromEntries(MODES.map((m) => [m, rs.filter((r) => r.hits[m]).length / rs.length])),
}));

console.log(
  `model: ${model?.id ?? JSON.stringify(model)}, min similarity ${process.env.CODESEARCH_MIN_SIMILARITY ?? 'default'}, ` +
    `fusion ${process.env.CODESEARCH_FUSION ?? 'default'}, ` +
    `${rows.length} queries, load average ${loadavg()[0].toFixed(2)}` +
    (notHybrid > 0 ? `, ${notHybrid} queries NOT run hybrid` : '') +
    (incomplete > 0 ? `, ${incomplete} semantic lists incomplete` : ''),
);
const cell = (rs, m) => {
  const n = rs.filter((r) => r.hits[m]).length;
  return `${(n / rs.length).toFixed(2)} (${n}/${rs.length})`;
};
console.log(`\n| queries (recall@${K}) | n | lexical | semantic | hybrid |\n| --- | --: | --: | --: | --: |`);
for (const [name, rs] of groups)
  console.log(`| ${name} | ${rs.length} | ${MODES.map((m) => cell(rs, m)).join(' | ')} |`);

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0;
console.log(
  `\nlatency over the socket, top 10: ` +
    ['lexical', 'hybrid']
      .map((m) => `${m} p50 ${pct(took[m], 0.5).toFixed(1)} ms, p95 ${pct(took[m], 0.95).toFixed(1)} ms`)
      .join('; '),
);

if (VERBOSE) {
  for (const m of MODES) {
    const missed = rows.filter((r) => !r.hits[m]);
    console.log(`\n${m}: ${missed.length} misses`);
    for (const r of missed)
      console.log(
        `  ${r.id.padEnd(9)} ${r.query}  → want ${r.expect.join('|')}, got ${r.lists[m].slice(0, 3).join(', ') || '(none)'}`,
      );
  }
}
if (process.env.BENCH_JSON)
  writeFileSync(
    process.env.BENCH_JSON,
    JSON.stringify(
      { model, table, took, rows: rows.map(({ id, lang, hits, lists }) => ({ id, lang, hits, lists })) },
      null,
      1,
    ),
  );
stop();
