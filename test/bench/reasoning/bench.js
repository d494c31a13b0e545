// Reasoning engine benchmark (issue 9): latency per layer and requests/s through the whole chain
// versus the engine alone.
//
//   npm run bench:reasoning                      # builds, starts dist/main.js, benchmarks, stops it
//   BENCH_URL=http://127.0.0.1:8006 node test/bench/reasoning/bench.js   # a service already running
//
// Environment: BENCH_REQUESTS (requests per run, default 200), BENCH_CASES (a case file in the
// evaluation format, default test/eval/reasoning/cases/primary-care.json: its texts are the load),
// BENCH_KB_DIR (the base the engine-alone runs compile, default the shipped primary-care base),
// REASONING_DEVICE (auto|cpu|cuda, for both), LLM_URL (passed to the service: with it the chain
// includes the LLM extractor, without it the rule pass alone). Everything else in the environment
// is passed to the service too.
//
// 1. The chain: POST /api/v1/diagnosis with each case's text (service -> rule extractor [-> LLM]
//    -> code lookup -> clinical map -> engine -> result) at concurrency 1 and 8; per layer the
//    p50/p95 of the response's timings_ms (understanding, normalisation, inference, presentation,
//    total and the stages), the client's wall latency, and requests/s.
// 2. The engine alone: the same base compiled with the engine's own API
//    (services/reasoning/dist/kb and dist/engine: loadKnowledgeBaseOrThrow, compileModel,
//    loadEngine), scoring the findings the chain extracted from the same texts: unbatched (one
//    score() at a time), concurrent score() x8 (the engine's micro-batching), and scoreBatch() in
//    batches of 64.
// 3. Ratios: engine-alone throughput over the chain's, and the inference layer's share of the
//    chain's total.
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadCaseFile } from '../../eval/reasoning/lib.js';
import { connect } from '../../eval/reasoning/cli.js';
import { postDiagnosis, ROOT } from '../../eval/reasoning/service.js';

const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 200);
const CASES = process.env['BENCH_CASES'] ?? join(ROOT, 'test/eval/reasoning/cases/primary-care.json');
const KB_DIR = process.env['BENCH_KB_DIR'] ?? join(ROOT, 'services/reasoning/kb/primary-care');
const DEVICE = /** @type {'auto' | 'cpu' | 'cuda'} */ (process.env['REASONING_DEVICE'] ?? 'auto');
const USE_LLM = Boolean(process.env['LLM_URL']);

/** @param {number[]} xs @param {number} q */
function quantile(xs, q) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (s[lo] ?? 0) + ((s[hi] ?? 0) - (s[lo] ?? 0)) * (pos - lo);
}

/** @param {number} x */
const ms = (x) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(3) : x.toFixed(1)) : 'n/a');

/** @param {string} name @param {number[]} xs */
const row = (name, xs) =>
  `  ${name.padEnd(22)} p50 ${ms(quantile(xs, 0.5)).padStart(9)} ms   p95 ${ms(quantile(xs, 0.95)).padStart(9)} ms`;

/**
 * Runs `total` tasks with at most `concurrency` in flight; returns wall-clock seconds.
 * @param {number} total @param {number} concurrency @param {(i: number) => Promise<void>} task
 */
async function pool(total, concurrency, task) {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next;
        next += 1;
        await task(i);
      }
    }),
  );
  return (performance.now() - start) / 1000;
}

const LAYERS = ['understanding', 'normalisation', 'inference', 'presentation', 'total'];

/**
 * @param {string} url @param {string[]} texts @param {number} concurrency
 */
async function benchChain(url, texts, concurrency) {
  /** @type {Record<string, number[]>} */
  const layers = Object.fromEntries(LAYERS.map((l) => [l, []]));
  /** @type {Record<string, number[]>} */
  const stages = {};
  const wall = [];
  let failed = 0;
  const seconds = await pool(REQUESTS, concurrency, async (i) => {
    const t0 = performance.now();
    try {
      const res = await postDiagnosis(url, {
        text: texts[i % texts.length],
        use_llm: USE_LLM,
        next_findings: 5,
      });
      wall.push(performance.now() - t0);
      const t = res.timings_ms ?? {};
      for (const l of LAYERS) if (typeof t[l] === 'number') layers[l]?.push(t[l]);
      for (const [k, v] of Object.entries(t.stages ?? {}))
        if (typeof v === 'number') (stages[k] ??= []).push(v);
    } catch (error) {
      failed += 1;
      if (failed === 1)
        console.error(`  first failure: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  return { concurrency, seconds, rps: (REQUESTS - failed) / seconds, failed, layers, stages, wall };
}

/** @param {Awaited<ReturnType<typeof benchChain>>} r */
function printChain(r) {
  console.log(
    `\nchain, concurrency ${r.concurrency}: ${REQUESTS} requests in ${r.seconds.toFixed(2)} s = ${r.rps.toFixed(1)} req/s` +
      (r.failed > 0 ? ` (${r.failed} failed)` : ''),
  );
  for (const l of LAYERS) console.log(row(`layer ${l}`, r.layers[l] ?? []));
  for (const [k, v] of Object.entries(r.stages)) console.log(row(`  stage ${k}`, v));
  console.log(row('client wall latency', r.wall));
}

async function main() {
  const { cases } = await loadCaseFile(CASES);
  const texts = cases.map((c) => c.text);
  const service = await connect(process.env['BENCH_URL']?.replace(/\/+$/, '') || null);
  console.log(
    `reasoning bench: ${texts.length} texts from ${CASES}; ${REQUESTS} requests per run; extractor ${USE_LLM ? 'rules + LLM (LLM_URL set)' : 'rules only (LLM_URL unset)'}; service ${service.url}`,
  );
  /** @type {{ feature: string, present: boolean, certainty: number }[][]} */
  const findingLists = [];
  /** @type {any} */
  let model = null;
  let chain1;
  let chain8;
  try {
    // Warm-up, and the findings the chain extracts from each text (the engine-alone input).
    for (const text of texts) {
      const res = await postDiagnosis(service.url, { text, use_llm: USE_LLM, next_findings: 5 });
      model = res.model;
      findingLists.push(
        (res.findings ?? []).map((/** @type {any} */ f) => ({
          feature: f.feature,
          present: f.present !== false,
          certainty: f.certainty ?? 1,
        })),
      );
    }
    const kbs = (model?.knowledge_bases ?? [])
      .map((/** @type {any} */ k) => `${k.id}@${k.version}`)
      .join(', ');
    console.log(
      `service model: engine ${model?.engine} on ${model?.device}${model?.device_reason ? ` (${model.device_reason})` : ''}; knowledge bases ${kbs}`,
    );
    const mean = findingLists.reduce((s, f) => s + f.length, 0) / findingLists.length;
    console.log(`findings per text: mean ${mean.toFixed(1)}`);
    chain1 = await benchChain(service.url, texts, 1);
    printChain(chain1);
    chain8 = await benchChain(service.url, texts, 8);
    printChain(chain8);
  } finally {
    await service.stop();
  }

  // The engine alone, on the same base, compiled with the engine's own API.
  const kbApi = await import(pathToFileURL(join(ROOT, 'services/reasoning/dist/kb/index.js')).href);
  const engineApi = await import(pathToFileURL(join(ROOT, 'services/reasoning/dist/engine/index.js')).href);
  const { knowledgeBase, report } = await kbApi.loadKnowledgeBaseOrThrow(KB_DIR);
  const compiled = engineApi.compileModel(knowledgeBase);
  const engine = await engineApi.loadEngine(compiled, { device: DEVICE, maxRanked: 10, maxNextFindings: 5 });
  const known = new Set(compiled.features);
  const lists = findingLists.map((l) => l.filter((f) => known.has(f.feature)));
  console.log(
    `\nengine alone: ${engine.info.kind} on ${engine.info.device}${engine.info.fallbackReason ? ` (${engine.info.fallbackReason})` : ''}; base ${report.id}@${report.version} from ${KB_DIR} (${report.conditions.scorable} scorable conditions); calibration identity`,
  );
  try {
    for (const f of lists.slice(0, 8)) await engine.score(f); // warm-up
    const unbatched = [];
    const s1 = await pool(REQUESTS, 1, async (i) => {
      const t0 = performance.now();
      await engine.score(lists[i % lists.length] ?? []);
      unbatched.push(performance.now() - t0);
    });
    const before = engine.stats();
    const concurrent = [];
    const s8 = await pool(REQUESTS, 8, async (i) => {
      const t0 = performance.now();
      await engine.score(lists[i % lists.length] ?? []);
      concurrent.push(performance.now() - t0);
    });
    const after = engine.stats();
    const batch = 64;
    const perBatch = [];
    const sb = await pool(Math.ceil(REQUESTS / batch), 1, async (b) => {
      const items = Array.from(
        { length: Math.min(batch, REQUESTS - b * batch) },
        (_, j) => lists[(b * batch + j) % lists.length] ?? [],
      );
      const t0 = performance.now();
      await engine.scoreBatch(items);
      perBatch.push(performance.now() - t0);
    });
    const e1 = REQUESTS / s1;
    const e8 = REQUESTS / s8;
    const eb = REQUESTS / sb;
    console.log(`  unbatched score(), 1 at a time: ${e1.toFixed(0)} req/s`);
    console.log(row('  latency', unbatched));
    console.log(
      `  score() x8 concurrent: ${e8.toFixed(0)} req/s, ${after.runs - before.runs} engine runs for ${after.requestsScored - before.requestsScored} requests`,
    );
    console.log(row('  latency', concurrent));
    console.log(`  scoreBatch() of ${batch}: ${eb.toFixed(0)} req/s`);
    console.log(row(`  per batch of ${batch}`, perBatch));

    const inf1 = quantile(chain1.layers['inference'] ?? [], 0.5);
    const tot1 = quantile(chain1.layers['total'] ?? [], 0.5);
    console.log('\nratios');
    console.log(
      `  engine unbatched / chain at concurrency 1: ${(e1 / chain1.rps).toFixed(1)}x the requests/s`,
    );
    console.log(`  engine x8 / chain at concurrency 8: ${(e8 / chain8.rps).toFixed(1)}x the requests/s`);
    console.log(
      `  engine scoreBatch(${batch}) / chain at concurrency 8: ${(eb / chain8.rps).toFixed(1)}x the requests/s`,
    );
    console.log(
      `  inference layer p50 / chain total p50 (concurrency 1): ${((100 * inf1) / tot1).toFixed(1)}%`,
    );
    console.log(
      `  chain p50 total / engine unbatched p50 latency: ${(tot1 / quantile(unbatched, 0.5)).toFixed(1)}x`,
    );
  } finally {
    await engine.dispose();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
