// The code search service's speed and quality, in one run, by hand (build first: `npx tsc -b
// services/codesearch`): `node test/bench/subservices/codesearch.js`.
//
// Starts the built service (dist/main.js) on a free loopback port over the real ICD-10-CM (46,881
// codes) and ICD-10-PCS (68,982) sets with the default embedder (multilingual-e5-small;
// CODESEARCH_EMBEDDER=minilm for MiniLM), waits until the ICD-10
// title vectors are built (once: they are cached in the data dir; ~90 s on 2 idle cores, see
// services/codesearch/README.md), then, over a real socket, for lexical (`hybrid: false`) and
// hybrid search:
//   - per-request latency p50/p95 (one request at a time, the query table in rounds);
//   - throughput at concurrency 1 and 4 (requests/s over BENCH_SECONDS);
//   - recall@10 on test/codesearch/query-table.json (the vi/en table and the lay-term table).
//
// Env: BENCH_DATA_DIR ($CLINICALSUITE_HOME/codesearch/bench-data), BENCH_ROUNDS (5),
// BENCH_SECONDS (5), BENCH_WAIT_VECTORS_S (2400), BENCH_THREADS (2: the embedder's threads).
import { readFileSync } from 'node:fs';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startBenchCodesearch } from '../codesearch/service.js';

const root = new URL('../../../', import.meta.url).pathname;
const home = process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite');
const DATA_DIR = process.env.BENCH_DATA_DIR ?? join(home, 'codesearch', 'bench-data');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '5');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '5');
const WAIT_S = Number(process.env.BENCH_WAIT_VECTORS_S ?? '2400');
const THREADS = process.env.BENCH_THREADS ?? '2';
const table = JSON.parse(readFileSync(join(root, 'test/codesearch/query-table.json'), 'utf8'));

const { json, stop } = await startBenchCodesearch({
  dataDir: DATA_DIR,
  threads: THREADS,
  waitS: WAIT_S,
  sets: ['codesearch-icd10cm', 'codesearch-icd10pcs'],
});

const rows = [...table.lexical, ...table.hybrid];
const norm = (c) => c.replace(/\./g, '').toUpperCase();
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const request = (row, hybrid) =>
  json('/search', { query: row.query, code_types: [row.type], top_k: 10, hybrid });

const results = [];
for (const hybrid of [false, true]) {
  // Warm-up, and recall@10.
  const found = { lexical: 0, hybrid: 0 };
  // PROCEDURE titles are not embedded by default (CODESEARCH_EMBED_TYPES): those run lexical.
  const ran = { lexical: 0, hybrid: 0 };
  for (const row of rows) {
    const { status, body } = await request(row, hybrid);
    if (status !== 200) throw new Error(`${row.query}: HTTP ${status}`);
    if (!hybrid && body.mode !== 'lexical') throw new Error(`${row.query}: ran ${body.mode}`);
    ran[body.mode]++;
    const hit = body.results.some((r) => norm(r.code).startsWith(norm(row.expect)));
    if (hit) found[table.lexical.includes(row) ? 'lexical' : 'hybrid']++;
  }
  const times = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of rows) {
      const t0 = performance.now();
      await request(row, hybrid);
      times.push(performance.now() - t0);
    }
  }
  times.sort((a, b) => a - b);
  const throughput = {};
  for (const concurrency of [1, 4]) {
    let done = 0;
    let next = 0;
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          await request(rows[next++ % rows.length], hybrid);
          done++;
        }
      }),
    );
    throughput[concurrency] = done / SECONDS;
  }
  results.push({
    mode: hybrid ? 'hybrid' : 'lexical',
    ran: `${ran.hybrid} hybrid / ${ran.lexical} lexical`,
    p50: pct(times, 0.5),
    p95: pct(times, 0.95),
    c1: throughput[1],
    c4: throughput[4],
    recallTable: found.lexical / table.lexical.length,
    recallLay: found.hybrid / table.hybrid.length,
  });
}

const status = (await json('/status')).body;
console.log(
  `codes: ${status.codes} (${Object.entries(status.types)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ')}), ` +
    `queries: ${table.lexical.length} vi/en + ${table.hybrid.length} lay, load average ${loadavg()[0].toFixed(2)}`,
);
console.log('mode     p50 ms  p95 ms  req/s c=1  req/s c=4  recall@10 vi/en  recall@10 lay  queries ran');
for (const r of results) {
  console.log(
    `${r.mode.padEnd(8)} ${r.p50.toFixed(2).padStart(6)}  ${r.p95.toFixed(2).padStart(6)}  ` +
      `${r.c1.toFixed(0).padStart(9)}  ${r.c4.toFixed(0).padStart(9)}  ` +
      `${r.recallTable.toFixed(3).padStart(15)}  ${r.recallLay.toFixed(3).padStart(13)}  ${r.ran}`,
  );
}
stop();
