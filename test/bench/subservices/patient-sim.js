// The patient simulator's speed over real sockets, in one run: per-turn latency p50/p95 and turns/s
// at concurrency 1 and 4, and the simulator's own overhead per turn (processing time minus the
// time in LLM calls: disclosure, prompt, reply check, sessions). Both services run from their
// built dist as children: services/llm/dist/main.js on the real llm-base GGUF when cached (else
// the tiny test GGUF the jest suites write), and services/patient-sim/dist/main.js in front of it.
//
// Run: `npx tsc -b services/llm services/patient-sim && node test/bench/subservices/patient-sim.js`
// Env: BENCH_MODEL (`base` default when cached | `tiny`), MODEL_PATH (any GGUF), BENCH_TURNS (turns
// per session, default 3), BENCH_SESSIONS (sessions per level, default 4), BENCH_MAX_TOKENS (24),
// BENCH_THREADS (llama.cpp threads: 2 for base, 1 for tiny), BENCH_LLM_CONCURRENCY (default 4).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const root = new URL('../../../', import.meta.url).pathname;
const TOKEN = 'bench-token-llm';
const TURNS = Number(process.env.BENCH_TURNS ?? '3');
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? '4');
const MAX_TOKENS = process.env.BENCH_MAX_TOKENS ?? '24';
const LLM_CONCURRENCY = process.env.BENCH_LLM_CONCURRENCY ?? '4';

const basePath = join(
  process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'),
  'models',
  'llm',
  'gemma-3-270m-q4_k_m.gguf',
);
/** The default tiny GGUF that test/fixtures/models/tiny-llama-gguf.ts writes (named by its options' hash). */
function tinyPath() {
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 1 }))
    .digest('hex')
    .slice(0, 12);
  return join(tmpdir(), 'clinicalsuite-test-models', `tiny-llama-${key}.gguf`);
}
const wanted = process.env.BENCH_MODEL ?? (existsSync(basePath) ? 'base' : 'tiny');
const modelPath = process.env.MODEL_PATH ?? (wanted === 'base' ? basePath : tinyPath());
// The tiny model is 20-40x slower on two threads of two busy cores (test/llm/helpers.ts).
const THREADS = process.env.BENCH_THREADS ?? (wanted === 'base' ? '2' : '1');
if (!existsSync(modelPath)) {
  console.error(
    wanted === 'base'
      ? `no model at ${basePath}: run \`npm run models -- fetch llm-base\`, or BENCH_MODEL=tiny`
      : 'no tiny GGUF yet: run the patient-sim or llm jest tests once (they write it), or set MODEL_PATH',
  );
  process.exit(1);
}
for (const dist of ['services/llm/dist/main.js', 'services/patient-sim/dist/main.js']) {
  if (!existsSync(join(root, dist))) {
    console.error(`${dist} is missing: npx tsc -b services/llm services/patient-sim`);
    process.exit(1);
  }
}

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

async function startChild(name, script, env, url) {
  const child = spawn(process.execPath, [join(root, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (data) => {
    log = (log + data.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}):\n${log}`);
    const ok = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    if (Date.now() > deadline) throw new Error(`${name} not healthy within 300 s:\n${log}`);
    await sleep(200);
  }
}

const CONVERSATIONS = {
  'en-cough-chest-pain-miller': [
    'Hello, I am Dr Lee. What brings you in today?',
    'Have you had a fever?',
    'Let me listen to your chest. Any cough?',
    "I'd like to order a chest x-ray and some blood tests.",
  ],
  'vi-sot-ngay-5-hoa': [
    'Chào em, em bị làm sao?',
    'Em sốt từ bao giờ?',
    'Chị đo sinh hiệu và khám bụng cho em nhé.',
    'Cho em làm xét nghiệm công thức máu.',
  ],
};

async function session(url, patientId) {
  const messages = CONVERSATIONS[patientId];
  const samples = [];
  let sessionId;
  for (let i = 0; i < TURNS; i++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/patient`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: messages[i % messages.length],
        patient_id: patientId,
        ...(sessionId === undefined ? {} : { session_id: sessionId }),
      }),
    });
    const body = await res.json();
    const wall = performance.now() - t0;
    if (res.status !== 200) throw new Error(`POST /patient ${res.status}: ${JSON.stringify(body)}`);
    sessionId = body.session_id;
    samples.push({
      wall,
      processing: body.processing_time_ms,
      llm: body.llm_time_ms,
      overhead: body.processing_time_ms - body.llm_time_ms,
      tokens: body.usage.completion_tokens,
    });
  }
  return samples;
}

const pct = (values, p) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const f = (x, d = 1) => x.toFixed(d);

async function level(url, concurrency) {
  const ids = Object.keys(CONVERSATIONS);
  const started = performance.now();
  const all = [];
  let next = 0;
  const worker = async () => {
    while (next < SESSIONS) {
      const n = next++;
      all.push(...(await session(url, ids[n % ids.length])));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const wall = all.map((s) => s.wall);
  const overhead = all.map((s) => s.overhead);
  return {
    concurrency,
    turns: all.length,
    p50: pct(wall, 50),
    p95: pct(wall, 95),
    turnsPerSecond: all.length / seconds,
    tokensPerSecond: all.reduce((a, s) => a + s.tokens, 0) / seconds,
    overheadP50: pct(overhead, 50),
    overheadP95: pct(overhead, 95),
    llmShare: all.reduce((a, s) => a + s.llm, 0) / all.reduce((a, s) => a + s.wall, 0),
  };
}

const llmPort = await freePort();
const simPort = await freePort();
const llmUrl = `http://127.0.0.1:${llmPort}`;
const simUrl = `http://127.0.0.1:${simPort}`;
const children = [];
const stop = () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
};
process.on('exit', stop);
try {
  children.push(
    await startChild(
      'llm',
      'services/llm/dist/main.js',
      {
        PORT: String(llmPort),
        HOST: '127.0.0.1',
        API_TOKEN: TOKEN,
        MODEL_PATH: modelPath,
        THREADS,
        GPU: 'false',
        CONTEXT_SIZE: '2048',
        MAX_CONCURRENCY: LLM_CONCURRENCY,
        LOG_LEVEL: 'warn',
      },
      llmUrl,
    ),
  );
  children.push(
    await startChild(
      'patient-sim',
      'services/patient-sim/dist/main.js',
      {
        PORT: String(simPort),
        HOST: '127.0.0.1',
        LLM_URL: llmUrl,
        API_TOKEN: TOKEN,
        PATIENT_SIM_MAX_TOKENS: MAX_TOKENS,
        PATIENT_SIM_TEMPERATURE: '0',
        PATIENT_SIM_SESSION_TTL_S: '600',
        LOG_LEVEL: 'warn',
      },
      simUrl,
    ),
  );
  console.log(
    `patient-sim bench: model ${modelPath} (${wanted}), llama.cpp threads ${THREADS}, LLM slots ${LLM_CONCURRENCY}, ` +
      `max_tokens ${MAX_TOKENS}, ${SESSIONS} sessions x ${TURNS} turns per level, load ${loadavg()
        .map((x) => f(x, 2))
        .join(' ')}`,
  );
  await session(simUrl, 'en-cough-chest-pain-miller'); // warm-up
  console.log(
    'concurrency  turns  p50 ms  p95 ms  turns/s  tokens/s  overhead p50 ms  overhead p95 ms  in LLM',
  );
  for (const c of [1, 4]) {
    const r = await level(simUrl, c);
    console.log(
      `${String(r.concurrency).padStart(11)}  ${String(r.turns).padStart(5)}  ${f(r.p50).padStart(6)}  ${f(r.p95).padStart(6)}  ` +
        `${f(r.turnsPerSecond, 2).padStart(7)}  ${f(r.tokensPerSecond).padStart(8)}  ${f(r.overheadP50, 2).padStart(15)}  ` +
        `${f(r.overheadP95, 2).padStart(15)}  ${f(r.llmShare * 100)}%`,
    );
  }
} finally {
  stop();
}
