// The code search service's start-up cost, by hand (build first: `npx tsc -b services/codesearch`):
// `npm run bench:codesearch` (or `node test/bench/codesearch/startup.js`).
//
// Starts the built service in this process on a fresh temporary DATA_DIR, over a real socket, with
// the real MiniLM ONNX embedder, and reports:
//   - first start: seconds until ready (code sets imported and indexed: lexical search answers),
//     until the embedding model is loaded, and until the title vectors are built (vectorsSettled);
//     titles embedded per second;
//   - the event loop's worst stall while the vectors build (perf_hooks.monitorEventLoopDelay) and
//     the slowest `GET /livez` answered meanwhile (polled every 100 ms over the socket);
//   - second start: the same DATA_DIR again: seconds until the vectors are ready (read from the
//     cache), and whether the log says so;
//   - the load average before and after, so a figure taken on a busy machine says so.
//
// Env: BENCH_CODES (0: the real first start, the built-in ICD-10-CM + ICD-10-PCS sets, ICD-10-CM
// embedded; N > 0: N ICD-10-CM codes spread evenly over the set, imported as the only set),
// BENCH_DIST (the codesearch dist folder to run, default services/codesearch/dist: point it at a
// copy of another build to compare), BENCH_THREADS (2), BENCH_BATCH and BENCH_EMBED_TYPES (the
// service's CODESEARCH_EMBED_BATCH and CODESEARCH_EMBED_TYPES; default theirs),
// BENCH_SECOND_START (1), BENCH_DATA_DIR (default a fresh temporary folder, removed after; an
// existing one is kept, so a start on it whose vectors are cached times the cache read alone).
// Prints one JSON line.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { createLogger, serve } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel } from '@clinicalsuite/kit/models';

const root = new URL('../../../', import.meta.url).pathname;
const DIST = resolve(process.env.BENCH_DIST ?? join(root, 'services/codesearch/dist'));
const CODES = Number(process.env.BENCH_CODES ?? '0');
const THREADS = process.env.BENCH_THREADS ?? '2';
const BATCH = process.env.BENCH_BATCH;
const EMBED_TYPES = process.env.BENCH_EMBED_TYPES;
const SECOND_START = (process.env.BENCH_SECOND_START ?? '1') !== '0';

const { buildCodesearchApp } = await import(join(DIST, 'app.js'));
const { loadCodesearchConfig } = await import(join(DIST, 'config.js'));
const { CodeStore } = await import(join(DIST, 'adapters/code-store.js'));
const { importCodeSet } = await import(join(DIST, 'adapters/importer.js'));
const { readIcd10CmTabular } = await import(join(DIST, 'adapters/icd10cm-xml.js'));

const modelsDir = defaultModelsDir(process.env);
for (const id of [
  'codesearch-icd10cm',
  'codesearch-icd10pcs',
  ...(process.env.CODESEARCH_EMBEDDER === 'minilm'
    ? ['codesearch-embedder', 'codesearch-embedder-tokenizer']
    : ['codesearch-e5', 'codesearch-e5-tokenizer']),
])
  await ensureModel(MODEL_MANIFEST[id], { modelsDir });

const KEEP = process.env.BENCH_DATA_DIR !== undefined;
const dataDir = process.env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'codesearch-bench-'));
mkdirSync(dataDir, { recursive: true });
const seconds = (ms) => Math.round(ms / 10) / 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (CODES > 0) {
  const all = await readIcd10CmTabular(join(modelsDir, MODEL_MANIFEST['codesearch-icd10cm'].file));
  const step = all.length / Math.min(CODES, all.length);
  const subset = Array.from({ length: Math.min(CODES, all.length) }, (_, i) => all[Math.floor(i * step)]);
  const file = join(dataDir, 'icd10-subset.jsonl');
  writeFileSync(file, subset.map((r) => JSON.stringify({ ...r, parent: null })).join('\n'));
  const imported = await importCodeSet(new CodeStore(dataDir), { type: 'ICD10', file });
  if (!imported.ok) throw new Error(JSON.stringify(imported.errors.slice(0, 5)));
  rmSync(file);
}

async function startOnce() {
  const logs = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') logs.push(JSON.parse(line));
      done();
    },
  });
  const config = loadCodesearchConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    MODELS_DIR: modelsDir,
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    AUTH_DISABLED: 'true',
    CODESEARCH_THREADS: THREADS,
    CODESEARCH_BUILTIN_SETS: CODES > 0 ? 'false' : 'true',
    CODESEARCH_RELOAD_POLL_MS: '0',
    LOG_LEVEL: 'info',
    ...(BATCH === undefined ? {} : { CODESEARCH_EMBED_BATCH: BATCH }),
    ...(EMBED_TYPES === undefined ? {} : { CODESEARCH_EMBED_TYPES: EMBED_TYPES }),
    ...(process.env.CODESEARCH_EMBEDDER === undefined
      ? {}
      : { CODESEARCH_EMBEDDER: process.env.CODESEARCH_EMBEDDER }),
  });
  const service = buildCodesearchApp({
    config,
    logger: createLogger({ service: 'codesearch', level: 'info', destination }),
    processMetrics: false,
  });
  // serve() loads the code sets once it listens (the time to listen is counted, and is small).
  const t0 = performance.now();
  const server = await serve(service.kit, { signals: [], exit: false });
  await service.codeSets.settled();
  const ready = performance.now() - t0;
  while (service.catalog.model === undefined) {
    if (service.catalog.snapshot === undefined || performance.now() - t0 > 120_000)
      throw new Error(`no model: ${service.catalog.modelReason}\n${JSON.stringify(logs.slice(-3))}`);
    await sleep(5);
  }
  const model = performance.now() - t0;
  // The first fetch of a process loads its HTTP client: not the service's time.
  await fetch(`${server.url}/livez`).then((r) => r.arrayBuffer());
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let livezMax = 0;
  let livezCount = 0;
  let building = true;
  const poll = (async () => {
    while (building) {
      const s = performance.now();
      const res = await fetch(`${server.url}/livez`);
      await res.arrayBuffer();
      livezMax = Math.max(livezMax, performance.now() - s);
      livezCount++;
      await sleep(100);
    }
  })();
  await service.catalog.vectorsSettled();
  const vectors = performance.now() - t0;
  building = false;
  await poll;
  loop.disable();
  const readyTypes = [...service.catalog.snapshot.vectors].filter(([, v]) => v.state === 'ready');
  const fromCache = logs.some((l) => l.msg === 'code title vectors read from the cache');
  await server.shutdown('bench finished');
  return {
    ready_s: seconds(ready),
    model_s: seconds(model),
    vectors_s: seconds(vectors),
    embed_s: seconds(vectors - model),
    titles: readyTypes.reduce((n, [, v]) => n + v.total, 0),
    types: readyTypes.map(([type]) => type),
    from_cache: fromCache,
    loop_max_ms: Math.round(loop.max / 1e6),
    loop_p99_ms: Math.round(loop.percentile(99) / 1e6),
    livez_max_ms: Math.round(livezMax),
    livez_polls: livezCount,
  };
}

const load0 = loadavg();
const first = await startOnce();
const load1 = loadavg();
const second = SECOND_START ? await startOnce() : null;
if (!KEEP) rmSync(dataDir, { recursive: true, force: true });
console.log(
  JSON.stringify({
    dist: DIST,
    codes: CODES > 0 ? CODES : 'builtin',
    threads: Number(THREADS),
    batch: BATCH === undefined ? 'default' : Number(BATCH),
    first: { ...first, titles_per_s: Math.round(first.titles / Math.max(first.embed_s, 0.01)) },
    second,
    loadavg_before: load0.map((x) => Math.round(x * 100) / 100),
    loadavg_after_first: load1.map((x) => Math.round(x * 100) / 100),
  }),
);
