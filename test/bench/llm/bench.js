// The text LLM service's speed on the real small model, in one run: tokens/s for one stream and
// aggregate tokens/s with 3 concurrent requests, time to first token, and the service against
// llama.cpp's own llama-server (and node-llama-cpp called in this process), all with the same
// model, threads, context, prompts and max tokens, greedy.
// Run by hand: `npm run bench:llm` (the first run builds llama-server, 5-15 min on 2 cores, into
// ~/.cache/clinicalsuite/llama-server/ with services/medllm/scripts/build-llama-server.sh). ~6 min a
// run; ~4 min with BENCH_SKIP_DIRECT=1.
//
// Rows: `service` (services/llm/dist/boot.cjs as a child, through the `openai` SDK, streamed, with
// the service's defaults); `direct` (node-llama-cpp in this process as it is commonly used:
// LlamaChat per request); `direct lockstep` (the same context, every request's next token pulled
// at once through node-llama-cpp's own sequences); `engine` (the service's engine in this process,
// engine-backend.js: its loop on node-llama-cpp's native addon, without HTTP, and without a client
// parsing the stream beside it); `llama-server` (through the same SDK code as the service).
// Targets: the service at >= 1.0x llama-server, single and 3 concurrent; on a GPU, aggregate at 3
// concurrent >= 1.8x one stream. On a CPU what a 3-token batch gains depends on the machine (from
// little to about 1.45x: services/llm/README.md, Speed), so the line prints llama-server's own
// aggregate / single beside the service's instead of a target.
//
// Threads: 2 (the service's default: the cores it may use) on a 2-core machine. The service runs
// with the libuv pool its entry chooses, 1 thread on the CPU and MAX_CONCURRENCY + 1 on a GPU
// (services/llm/src/thread-pool.ts); the line "libuv thread pool" says what each side had. Every
// round runs each row back to back, in a rotated order; the figures are medians over the rounds.
// This machine's neighbours move single runs by 10% and more: check the load line, compare rows of
// the same run only, and repeat.
//
// Env: BENCH_THREADS (2), BENCH_MAX_TOKENS (128), BENCH_ROUNDS (5), BENCH_SINGLE (2 sequential
// requests a round: ROUNDS x SINGLE TTFT samples), BENCH_BATCHES (1 batch of 3 concurrent a round),
// MODEL_PATH (default: the manifest's `llm-base`, `npm run models -- fetch llm-base`),
// LLAMA_SERVER (a llama-server binary instead of building one), BENCH_SKIP_LLAMA_SERVER=1,
// BENCH_GPU (`false`: CPU only; `cuda`: every layer on the GPU in all three, the service with
// GPU=cuda GPU_LAYERS=max, llama-server with -ngl 99, built with LLAMA_SERVER_GPU=cuda unless
// LLAMA_SERVER names one), BENCH_SERVICE_POOL (the service's UV_THREADPOOL_SIZE instead of its
// entry's choice), UV_THREADPOOL_SIZE (in-process node-llama-cpp's, likewise), BENCH_SKIP_ENGINE=1
// (no `engine` row), BENCH_SKIP_DIRECT=1 (no `direct` rows), BENCH_SERVICE_ENV (JSON: variables
// for the service, e.g. '{"STREAM_INTERVAL_MS":"100"}'), BENCH_COMPARE_ENV (JSON: a second
// service, row `service*`, with these variables beside the first, to measure a setting with and
// without in one run).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { LlamaChat, LlamaLogLevel, getLlama, resolveChatWrapper } from 'node-llama-cpp';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';
import { threadPoolChoice, uvThreadpoolSizeOf } from '../../../services/llm/dist/thread-pool.js';
import { engineBackend } from './engine-backend.js';
import { chatPrompt, tokensResult } from './generation.js';

const THREADS = Number(process.env.BENCH_THREADS ?? '2');
const MAX_TOKENS = Number(process.env.BENCH_MAX_TOKENS ?? '128');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '5');
const SINGLE = Number(process.env.BENCH_SINGLE ?? '2');
const BATCHES = Number(process.env.BENCH_BATCHES ?? '1');
const CONCURRENCY = 3;
const SKIP_DIRECT = process.env.BENCH_SKIP_DIRECT === '1';
const GPU = process.env.BENCH_GPU ?? 'false';
if (!['false', 'cuda'].includes(GPU)) {
  console.error(`BENCH_GPU must be false or cuda, got ${GPU}`);
  process.exit(2);
}
const onGpu = GPU !== 'false';
// The service's context: CONTEXT_SIZE tokens for each of MAX_CONCURRENCY sequences, reused (with
// their prompt prefix kept, as llama-server's prompt cache keeps it). Direct node-llama-cpp takes a
// fresh sequence per request, as LlamaChat is commonly used, so its context has as many again:
// a finished sequence's id comes back only when node-llama-cpp's batch loop idles.
const CONTEXT_SIZE = 4096;
const SEQUENCES = CONCURRENCY * 2;
const TOKEN = 'bench-token-llm';
const MODEL_ALIAS = 'alpha-2-9b-it';
const root = new URL('../../../', import.meta.url).pathname;
// The service is started as the runner and the operator start it: through its entry, dist/boot.cjs,
// which sizes libuv's thread pool for where it decodes (1 on the CPU, one per slot plus one on a
// GPU: services/llm/src/thread-pool.ts). BENCH_SERVICE_POOL sets it instead. In-process
// node-llama-cpp (`direct`) gets the same: unless UV_THREADPOOL_SIZE is set, this script runs itself
// again with the size the entry would choose (libuv reads it only as a process starts).
const SERVICE_POOL = process.env.BENCH_SERVICE_POOL || undefined;
const SERVICE_ENV = JSON.parse(process.env.BENCH_SERVICE_ENV || '{}');
const COMPARE_ENV = process.env.BENCH_COMPARE_ENV ? JSON.parse(process.env.BENCH_COMPARE_ENV) : undefined;
const directPool = threadPoolChoice({
  GPU,
  GPU_LAYERS: onGpu ? 'max' : 'auto',
  MAX_CONCURRENCY: String(CONCURRENCY),
});
if (process.env.UV_THREADPOOL_SIZE === undefined) {
  const again = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: { ...process.env, UV_THREADPOOL_SIZE: String(directPool.size) },
  });
  process.exit(again.status ?? 1);
}
const modelPath =
  process.env.MODEL_PATH ?? resolveModelPath(defaultModelsDir(process.env), MODEL_MANIFEST['llm-base']);

// Fixed prompts that the base model continues for the whole max_tokens under greedy decoding.
const PROMPTS = [
  'Write a detailed discharge summary for a 54-year-old man admitted with acute chest pain.',
  'Explain, step by step, how to manage a patient with newly diagnosed type 2 diabetes.',
  'Describe the symptoms, causes, diagnosis and treatment of community-acquired pneumonia.',
  'List the differential diagnosis of abdominal pain in a 30-year-old woman, with reasons.',
  'Write a referral letter to a cardiologist for a patient with atrial fibrillation.',
  'Explain the difference between viral and bacterial infections to a patient.',
];

if (!existsSync(modelPath)) {
  console.error(`no model at ${modelPath}: run \`npm run models -- fetch llm-base\` or set MODEL_PATH`);
  process.exit(1);
}

/** Go toolchain builds running on this machine (they compete for the same cores). */
const goBuilds = () =>
  spawnSync('pgrep', ['-f', 'go (build|install)|/pkg/tool/.*/(compile|link) '], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean).length;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = load();
const goAtStart = goBuilds();

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts a child and waits until `GET <url>/health` answers 200. */
async function startChild(name, command, args, env, url) {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (data) => {
    log = (log + data.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${log}`);
    }
    const ok = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, log: () => log };
    if (Date.now() > deadline) throw new Error(`${name} not healthy within 300 s:\n${log}`);
    await sleep(200);
  }
}

/** One streamed completion through the OpenAI SDK: the same client code for both servers. */
function openAiBackend(name, baseURL) {
  const client = new OpenAI({ baseURL, apiKey: TOKEN, maxRetries: 0, timeout: 600_000 });
  return {
    name,
    async generate(prompt) {
      const t0 = performance.now();
      let first;
      let text = '';
      let usage;
      const stream = await client.chat.completions.create({
        model: MODEL_ALIAS,
        messages: [{ role: 'user', content: prompt }],
        temperature: 0,
        max_tokens: MAX_TOKENS,
        stream: true,
        stream_options: { include_usage: true },
        // llama-server would otherwise reuse a slot's cached prompt from the last round; the
        // service (and direct node-llama-cpp) evaluate every prompt afresh. The service drops it.
        cache_prompt: false,
      });
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta?.content;
        if (content) {
          first ??= performance.now();
          text += content;
        }
        if (chunk.usage) usage = chunk.usage;
      }
      const end = performance.now();
      if (usage === undefined) throw new Error(`${name}: no usage in the stream`);
      return {
        start: t0,
        first: first ?? end,
        end,
        tokens: usage.completion_tokens,
        promptTokens: usage.prompt_tokens,
        text,
      };
    },
  };
}

/**
 * node-llama-cpp in this process, used as the service's engine uses it: one context of
 * CONTEXT_SIZE x SEQUENCES, a fresh sequence and a LlamaChat per request with the model's
 * resolved chat wrapper, greedy, no repeat penalty, text streamed through onTextChunk.
 */
async function directBackend() {
  const llama = await getLlama({
    gpu: onGpu ? GPU : false,
    maxThreads: THREADS,
    logLevel: LlamaLogLevel.error,
  });
  const model = await llama.loadModel({ modelPath, gpuLayers: onGpu ? 'max' : 'auto' });
  const context = await model.createContext({
    contextSize: CONTEXT_SIZE,
    sequences: SEQUENCES,
    threads: THREADS,
  });
  const chatWrapper = resolveChatWrapper(model);
  return {
    name: 'direct',
    wrapper: chatWrapper.wrapperName,
    async generate(prompt) {
      const t0 = performance.now();
      let first;
      let tokens = 0;
      while (context.sequencesLeft === 0) await sleep(2);
      const sequence = context.getSequence();
      const chat = new LlamaChat({ contextSequence: sequence, chatWrapper, autoDisposeSequence: false });
      try {
        const { history, tokens: prompted } = chatPrompt(model, chatWrapper, prompt);
        const promptTokens = prompted.length;
        const result = await chat.generateResponse(history, {
          maxTokens: MAX_TOKENS,
          temperature: 0,
          repeatPenalty: false,
          onTextChunk: (chunk) => {
            if (chunk !== '') first ??= performance.now();
          },
          onToken: (t) => {
            tokens += t.length;
          },
        });
        const end = performance.now();
        return { start: t0, first: first ?? end, end, tokens, promptTokens, text: result.response };
      } finally {
        chat.dispose();
        void sequence.dispose();
      }
    },
    lockstep: lockstepBackend(model, context, chatWrapper),
    dispose: () => llama.dispose(),
  };
}

/**
 * The same node-llama-cpp context driven in lockstep: one driver pulls the next token of every
 * request in work at once (each sequence's `evaluate` iterator), so all of them are queued in the
 * same tick and decoded in one batch; a new request joins at the next step with its prompt.
 * Not what the service does: it shows what batching node-llama-cpp's decoder allows (the fix).
 */
function lockstepBackend(model, context, chatWrapper) {
  const active = new Set();
  let driving = false;
  const drive = async () => {
    driving = true;
    try {
      while (active.size > 0) {
        const jobs = [...active];
        const steps = await Promise.allSettled(jobs.map((job) => job.iterator.next()));
        const now = performance.now();
        steps.forEach((step, i) => {
          const job = jobs[i];
          if (step.status === 'rejected' || step.value.done) return job.finish(step.reason);
          job.tokens.push(step.value.value);
          job.first ??= now;
          if (job.tokens.length >= MAX_TOKENS) job.finish();
        });
      }
    } finally {
      driving = false;
    }
  };
  return {
    name: 'direct lockstep',
    async generate(prompt) {
      const start = performance.now();
      while (context.sequencesLeft === 0) await sleep(2);
      const sequence = context.getSequence();
      const { tokens: promptTokens } = chatPrompt(model, chatWrapper, prompt);
      const job = {
        iterator: sequence.evaluate(promptTokens, { temperature: 0 })[Symbol.asyncIterator](),
        tokens: [],
        first: undefined,
      };
      try {
        await new Promise((resolve, reject) => {
          job.finish = (error) => {
            active.delete(job);
            void job.iterator.return();
            if (error === undefined) resolve();
            else reject(error);
          };
          active.add(job);
          if (!driving) void drive();
        });
        return tokensResult(model, { ...job, start, promptTokens: promptTokens.length });
      } finally {
        void sequence.dispose();
      }
    },
  };
}

async function serviceBackend(name = 'service', variables = SERVICE_ENV) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const inherited = { ...process.env };
  delete inherited.UV_THREADPOOL_SIZE;
  const env = {
    ...inherited,
    ...(SERVICE_POOL === undefined ? {} : { UV_THREADPOOL_SIZE: SERVICE_POOL }),
    PORT: String(port),
    HOST: '127.0.0.1',
    API_TOKEN: TOKEN,
    MODEL_PATH: modelPath,
    MODEL_ALIAS,
    THREADS: String(THREADS),
    GPU,
    GPU_LAYERS: onGpu ? 'max' : 'auto',
    MAX_CONCURRENCY: String(CONCURRENCY),
    CONTEXT_SIZE: String(CONTEXT_SIZE),
    ...(onGpu ? {} : { NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi' }),
    LOG_LEVEL: 'warn',
    ...variables,
  };
  const entry = `${root}services/llm/dist/boot.cjs`;
  const { child } = await startChild('the service', process.execPath, [entry], env, url);
  const status = await fetch(`${url}/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const { uv_threadpool_size: pool } = await status.json();
  return { ...openAiBackend(name, `${url}/v1`), child, pool };
}

async function llamaServerBackend() {
  const binary =
    process.env.LLAMA_SERVER ??
    execFileSync(`${root}services/medllm/scripts/build-llama-server.sh`, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LLAMA_SERVER_GPU: onGpu ? GPU : 'cpu' },
    })
      .trim()
      .split('\n')
      .at(-1);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    ...['-m', modelPath, '--host', '127.0.0.1', '--port', String(port), '--api-key', TOKEN],
    ...['-t', String(THREADS), '-tb', String(THREADS)],
    ...(onGpu ? ['-ngl', '99'] : []),
    // llama-server splits -c over its slots: 3 x CONTEXT_SIZE gives each request the service's
    // CONTEXT_SIZE.
    ...['-c', String(CONTEXT_SIZE * CONCURRENCY), '--parallel', String(CONCURRENCY)],
    // The base model's GGUF has no chat template. The service falls back to node-llama-cpp's
    // GemmaChatWrapper (picked from the architecture); llama.cpp's built-in `gemma` template
    // renders the same `<start_of_turn>user ... <end_of_turn>\n<start_of_turn>model\n` prompt
    // (prompt token counts are printed to check). Jinja is off so that template is used as named.
    ...['--chat-template', 'gemma', '--no-jinja'],
    // Same batch as node-llama-cpp's default for this context (min(contextSize x sequences, 512)).
    ...['-b', '512', '-ub', '512'],
    '--no-webui',
  ];
  const { child } = await startChild('llama-server', binary, args, process.env, url);
  return { ...openAiBackend('llama-server', `${url}/v1`), child, binary };
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
};
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)];

async function measureSingle(backend, stats, round) {
  for (let i = 0; i < SINGLE; i++) {
    const r = await backend.generate(PROMPTS[(round * SINGLE + i) % PROMPTS.length]);
    stats.single.push(r);
  }
}

async function measureConcurrent(backend, stats, round) {
  for (let b = 0; b < BATCHES; b++) {
    const offset = (round * BATCHES + b) * CONCURRENCY;
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: CONCURRENCY }, (_, i) => backend.generate(PROMPTS[(offset + i) % PROMPTS.length])),
    );
    stats.batches.push({ wall: performance.now() - t0, tokens: sum(results.map((r) => r.tokens)) });
  }
}

const backends = [];
const stopAll = async () => {
  for (const b of backends) {
    b.child?.kill('SIGTERM');
    await b.dispose?.();
  }
};
try {
  const service = await serviceBackend();
  backends.push(service);
  if (COMPARE_ENV !== undefined)
    backends.push(await serviceBackend('service*', { ...SERVICE_ENV, ...COMPARE_ENV }));
  const direct = SKIP_DIRECT ? undefined : await directBackend();
  if (direct !== undefined) backends.push(direct, direct.lockstep);
  if (process.env.BENCH_SKIP_ENGINE !== '1') {
    backends.push(
      await engineBackend({
        modelPath,
        contextSize: CONTEXT_SIZE,
        sequences: CONCURRENCY,
        threads: THREADS,
        gpu: onGpu ? GPU : false,
        maxTokens: MAX_TOKENS,
      }),
    );
  }
  if (process.env.BENCH_SKIP_LLAMA_SERVER !== '1') backends.push(await llamaServerBackend());

  const stats = new Map(backends.map((b) => [b.name, { single: [], batches: [] }]));
  // Warm each (first decode allocates buffers), then interleave: every round runs each backend
  // back to back, in a rotated order, so drift in the machine's load hits them alike.
  for (const b of backends) await b.generate(PROMPTS[0]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < backends.length; k++) {
      const b = backends[(round + k) % backends.length];
      await measureSingle(b, stats.get(b.name), round);
      await measureConcurrent(b, stats.get(b.name), round);
    }
  }
  const loadAtEnd = load();
  const goAtEnd = goBuilds();

  const rows = new Map();
  for (const b of backends) {
    const { single, batches } = stats.get(b.name);
    // Medians over the requests (single) and batches (3 concurrent): a burst of other work on the
    // machine moves a few samples, not the median. Best: the fastest sample (noise only slows).
    const singles = single.map((r) => r.tokens / ((r.end - r.start) / 1000));
    const aggs = batches.map((x) => x.tokens / (x.wall / 1000));
    const ttft = single.map((r) => r.first - r.start);
    rows.set(b.name, {
      singleTps: median(singles),
      decodeTps: median(single.map((r) => (r.tokens - 1) / ((r.end - r.first) / 1000))),
      aggTps: median(aggs),
      bestSingle: Math.max(...singles),
      bestAgg: Math.max(...aggs),
      ttft50: median(ttft),
      ttft90: pct(ttft, 90),
      tokensPerReq: sum(single.map((r) => r.tokens)) / single.length,
      promptTokens: sum(single.map((r) => r.promptTokens)) / single.length,
      texts: single.map((r) => r.text),
    });
  }

  const f1 = (x) => x.toFixed(1);
  const f2 = (x) => `${x.toFixed(2)}x`;
  console.log(
    `text LLM benchmark: ${basename(modelPath)}, threads ${THREADS}, ${onGpu ? `GPU ${GPU} (all layers)` : 'CPU only'}, max_tokens ${MAX_TOKENS}, greedy, ` +
      `${ROUNDS} rounds interleaved (${SINGLE} single + ${BATCHES} x ${CONCURRENCY} concurrent each)`,
  );
  console.log(
    `  context: service ${CONTEXT_SIZE} x ${CONCURRENCY} sequences, direct ${CONTEXT_SIZE} x ${SEQUENCES} (${CONCURRENCY} in work); ` +
      `llama-server -c ${CONTEXT_SIZE * CONCURRENCY} --parallel ${CONCURRENCY}; chat format ${direct?.wrapper ?? 'the service’s'} / --chat-template gemma`,
  );
  console.log(
    `  libuv thread pool: service ${service.pool}${SERVICE_POOL === undefined ? ' (its entry’s choice)' : ' (BENCH_SERVICE_POOL)'}, ` +
      `in-process direct ${uvThreadpoolSizeOf(process.env.UV_THREADPOOL_SIZE)}; ` +
      `service variables: ${Object.keys(SERVICE_ENV).length === 0 ? 'its defaults' : JSON.stringify(SERVICE_ENV)}`,
  );
  console.log(
    `  load avg 1/5/15 min: start ${loadAtStart}, end ${loadAtEnd}; go builds running: start ${goAtStart}, end ${goAtEnd}`,
  );
  console.log(
    '  (medians)        single tok/s  decode tok/s  3-conc agg tok/s  agg/single  TTFT p50/p90 ms  tok/req  prompt tok',
  );
  for (const [name, r] of rows) {
    console.log(
      `  ${name.padEnd(15)}  ${f1(r.singleTps).padStart(12)}  ${f1(r.decodeTps).padStart(12)}  ${f1(r.aggTps).padStart(16)}` +
        `  ${f2(r.aggTps / r.singleTps).padStart(10)}  ${`${r.ttft50.toFixed(0)}/${r.ttft90.toFixed(0)}`.padStart(15)}` +
        `  ${f1(r.tokensPerReq).padStart(7)}  ${f1(r.promptTokens).padStart(10)}`,
    );
  }
  const s = rows.get('service');
  const ls = rows.get('llama-server');
  const e = rows.get('engine');
  const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
  const same = (a, b) => `${a.texts.filter((t, i) => t === b.texts[i]).length}/${a.texts.length}`;
  if (ls !== undefined) {
    for (const [what, ratio] of [
      ['single', s.singleTps / ls.singleTps],
      ['3 concurrent', s.aggTps / ls.aggTps],
    ]) {
      console.log(
        `  service / llama-server, ${what}: ${f2(ratio)} (target >= 1.0x) -> ${verdict(ratio >= 1)}`,
      );
    }
    console.log(`  service / llama-server: TTFT p50 ${f2(s.ttft50 / ls.ttft50)}; same text ${same(s, ls)}`);
  }
  const c = rows.get('service*');
  if (c !== undefined) {
    console.log(
      `  service* (${JSON.stringify(COMPARE_ENV)}) / service: single ${f2(c.singleTps / s.singleTps)}, 3 concurrent ` +
        `${f2(c.aggTps / s.aggTps)}` +
        (ls === undefined
          ? ''
          : `; service* / llama-server: ${f2(c.singleTps / ls.singleTps)}, ${f2(c.aggTps / ls.aggTps)}`),
    );
  }
  const agg = f2(s.aggTps / s.singleTps);
  console.log(
    onGpu
      ? `  service aggregate / single: ${agg} (target >= 1.8x on a GPU) -> ${verdict(s.aggTps / s.singleTps >= 1.8)}`
      : `  service aggregate / single: ${agg}${ls === undefined ? '' : `, llama-server's ${f2(ls.aggTps / ls.singleTps)}`} (on a CPU: no target)`,
  );
  if (e !== undefined) {
    console.log(
      `  service / engine (what HTTP and a client beside it cost): single ${f2(s.singleTps / e.singleTps)}, ` +
        `3 concurrent ${f2(s.aggTps / e.aggTps)}` +
        (ls === undefined
          ? ''
          : `; engine / llama-server: single ${f2(e.singleTps / ls.singleTps)}, 3 concurrent ${f2(e.aggTps / ls.aggTps)}`),
    );
  }
  const d = rows.get('direct');
  const l = rows.get('direct lockstep');
  if (d !== undefined && l !== undefined) {
    console.log(
      `  service / node-llama-cpp LlamaChat per request: single ${f2(s.singleTps / d.singleTps)}, 3 concurrent ` +
        `${f2(s.aggTps / d.aggTps)}; same text ${same(s, d)}; lockstep / LlamaChat: 3 concurrent ${f2(l.aggTps / d.aggTps)}`,
    );
  }
  const best = [...rows].map(([name, r]) => `${name} ${f1(r.bestSingle)}/${f1(r.bestAgg)}`).join(', ');
  console.log(`  best single/3-concurrent tok/s: ${best}`);
} finally {
  await stopAll();
}
