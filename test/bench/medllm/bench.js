// The medical multimodal LLM service's speed (issue 10): time to first token and decode tokens/s
// for text-only and image+text requests, streamed through the `openai` SDK, through the service's
// front and straight to the same llama-server, and the front's overhead as ratios (front / direct).
// Run by hand: `npm run bench:medllm`.
//
// Rows, each on the same llama-server (one process, so both see the same model, threads and
// cache), requests alternating so load drifts hit both alike:
//   direct       the SDK against llama-server's own /v1/chat/completions;
//   front        services/medllm/dist/main.js (BACKEND_URL = that llama-server): validation, image
//                checks with sharp, token counting (/apply-template + /tokenize), gate, certainty
//                guard (rewrite: it holds back 40 characters, which shows in the time to the first
//                visible token), SSE re-framing;
//   front, guard off   the same with CERTAINTY_GUARD=off.
// Every row gets the same prompt in a round, numbered per row ("Case 1010.", "Case 1011." …) so
// llama-server's prompt cache (on by default) cannot skip one row's prefill with another's.
//
// Model: MODEL_PATH and MMPROJ_PATH (e.g. MedGemma 4B IT's GGUF and mmproj), else the tiny
// generated multimodal model the tests write into the temp dir (run test/medllm/service.test.ts
// once). llama-server: LLAMA_SERVER_PATH, else services/medllm/scripts/build-llama-server.sh --check.
// Env: BENCH_THREADS (2), BENCH_MAX_TOKENS (64), BENCH_ROUNDS (10), BENCH_CONTEXT (4096),
// BENCH_IMAGE_SIZE (512: the test image's side in pixels).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import sharp from 'sharp';
import { DEFAULT_SYSTEM_PROMPT } from '../../../services/medllm/dist/config.js';

const THREADS = Number(process.env.BENCH_THREADS ?? '2');
const MAX_TOKENS = Number(process.env.BENCH_MAX_TOKENS ?? '64');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '10');
const CONTEXT = Number(process.env.BENCH_CONTEXT ?? '4096');
const IMAGE_SIZE = Number(process.env.BENCH_IMAGE_SIZE ?? '512');
const MODEL = 'medmodel-1.5-4b-it';
const root = new URL('../../../', import.meta.url).pathname;

function fail(message) {
  console.error(`bench:medllm: ${message}`);
  process.exit(2);
}

function llamaServer() {
  if (process.env.LLAMA_SERVER_PATH) return process.env.LLAMA_SERVER_PATH;
  const script = join(root, 'services/medllm/scripts/build-llama-server.sh');
  try {
    return execFileSync('bash', [script, '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .trim()
      .split('\n')
      .at(-1);
  } catch {
    return fail(`llama-server is not built: run ${script} (or set LLAMA_SERVER_PATH)`);
  }
}

/** MODEL_PATH/MMPROJ_PATH, else the newest tiny multimodal pair the tests wrote. */
function modelFiles() {
  if (process.env.MODEL_PATH && process.env.MMPROJ_PATH) {
    return { model: process.env.MODEL_PATH, mmproj: process.env.MMPROJ_PATH, tiny: false };
  }
  const dir = join(tmpdir(), 'clinicalsuite-test-models');
  const pairs = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => /^tiny-mtmd-[0-9a-f]+\.mmproj\.gguf$/.test(f))
        .map((f) => ({ mmproj: join(dir, f), model: join(dir, f.replace('.mmproj.gguf', '.gguf')) }))
        .filter((p) => existsSync(p.model))
        .sort((a, b) => statSync(b.mmproj).mtimeMs - statSync(a.mmproj).mtimeMs)
    : [];
  if (pairs.length === 0) {
    return fail(
      'no model: set MODEL_PATH and MMPROJ_PATH, or run test/medllm/service.test.ts once to write the tiny model',
    );
  }
  return { ...pairs[0], tiny: true };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, child, name, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) fail(`${name} exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  fail(`${name} did not become healthy in ${timeoutMs / 1000} s`);
}

function start(binary, args, env, name) {
  const child = spawn(binary, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr.on('data', (d) => {
    tail = (tail + d.toString()).slice(-2000);
  });
  child.on('exit', (code) => {
    if (code !== 0 && code !== null && !stopping) console.error(`${name} exited ${code}:\n${tail}`);
  });
  return child;
}

let stopping = false;

async function testImage() {
  // A radiograph-like gradient with structure (not a flat colour, which compresses to nothing).
  const side = IMAGE_SIZE;
  const pixels = Buffer.alloc(side * side);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const dx = x - side / 2;
      const dy = y - side / 2;
      pixels[y * side + x] = Math.max(
        0,
        Math.min(255, 200 - Math.hypot(dx, dy) / 2 + ((x * 7 + y * 13) % 17)),
      );
    }
  }
  const png = await sharp(pixels, { raw: { width: side, height: side, channels: 1 } })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

const PROMPTS = [
  'Describe the findings you would look for on a frontal chest radiograph of a patient with cough and fever.',
  'Explain how a dermatologist describes a pigmented skin lesion, feature by feature.',
  'List what a CT of the head shows in an acute ischaemic stroke, hour by hour.',
  'Describe an abdominal ultrasound of a patient with right upper quadrant pain.',
];

/** One streamed request; times from send to first content and to the end. */
async function once(client, content, system) {
  const t0 = performance.now();
  let first;
  let usage;
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [
      ...(system ? [{ role: 'system', content: DEFAULT_SYSTEM_PROMPT }] : []),
      { role: 'user', content },
    ],
    // The spec names it max_tokens.
    max_tokens: MAX_TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    if (first === undefined && chunk.choices[0]?.delta.content) first = performance.now();
    if (chunk.usage) usage = chunk.usage;
  }
  const end = performance.now();
  const tokens = usage?.completion_tokens ?? 0;
  return {
    ttftMs: (first ?? end) - t0,
    e2eMs: end - t0,
    tokens,
    promptTokens: usage?.prompt_tokens ?? 0,
    // Decode speed after the first visible token (the first may carry several tokens when held back).
    tps: tokens > 1 && first !== undefined && end > first ? (tokens - 1) / ((end - first) / 1000) : NaN,
  };
}

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main() {
  const binary = llamaServer();
  const files = modelFiles();
  const image = await testImage();
  const backendPort = await freePort();
  const backendUrl = `http://127.0.0.1:${backendPort}`;
  const args = [
    '--model',
    files.model,
    '--mmproj',
    files.mmproj,
    '--alias',
    MODEL,
    '--ctx-size',
    String(CONTEXT),
    '--parallel',
    '1',
    '--threads',
    String(THREADS),
    '--n-gpu-layers',
    process.env.BENCH_GPU_LAYERS ?? 'auto',
    '--no-webui',
    '--host',
    '127.0.0.1',
    '--port',
    String(backendPort),
  ];
  const children = [];
  const stop = () => {
    stopping = true;
    for (const c of children) c.kill('SIGTERM');
  };
  process.on('exit', stop);
  const backend = start(binary, args, {}, 'llama-server');
  children.push(backend);
  await waitHealthy(backendUrl, backend, 'llama-server');

  const fronts = [];
  for (const guard of ['rewrite', 'off']) {
    const port = await freePort();
    const child = start(
      process.execPath,
      [join(root, 'services/medllm/dist/main.js')],
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        BACKEND_URL: backendUrl,
        CONTEXT_SIZE: String(CONTEXT),
        CERTAINTY_GUARD: guard,
        LOG_LEVEL: 'warn',
        BACKEND_HEALTH_INTERVAL_MS: '5000',
      },
      `front (guard ${guard})`,
    );
    children.push(child);
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url, child, `front (guard ${guard})`, 30_000);
    fronts.push({ name: guard === 'rewrite' ? 'front' : 'front, guard off', url });
  }
  const rows = [{ name: 'direct', url: backendUrl }, ...fronts].map((r) => ({
    ...r,
    // The front puts the deployment's system prompt first: direct requests carry the same one.
    system: r.name === 'direct',
    client: new OpenAI({ baseURL: `${r.url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    results: { text: [], image: [] },
  }));

  console.log(
    `model ${basename(files.model)} + ${basename(files.mmproj)}${files.tiny ? ' (tiny generated model: random weights)' : ''}; ` +
      `llama-server ${binary}; threads ${THREADS}; context ${CONTEXT}; max_tokens ${MAX_TOKENS}; rounds ${ROUNDS}; ` +
      `image ${IMAGE_SIZE}x${IMAGE_SIZE} PNG (${Math.round((image.length * 3) / 4 / 1024)} KiB); load ${loadavg()[0].toFixed(2)}`,
  );
  // Warm-up: one of each kind on each row (first image request loads the vision graph).
  const content = (kind, round, row) => {
    const text = `Case ${1000 + round * 10 + row}. ${PROMPTS[(round + PROMPTS.length) % PROMPTS.length]}`;
    return kind === 'text'
      ? text
      : [
          { type: 'text', text },
          { type: 'image_url', image_url: { url: image } },
        ];
  };
  for (const [i, row] of rows.entries()) {
    for (const kind of ['text', 'image']) await once(row.client, content(kind, -1, i), row.system);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of ['text', 'image']) {
      for (const row of round % 2 === 0 ? rows : [...rows].reverse()) {
        row.results[kind].push(await once(row.client, content(kind, round, rows.indexOf(row)), row.system));
      }
    }
  }

  const pad = (s, w) => String(s).padEnd(w);
  const num = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  console.log(
    `\n${pad('row', 18)}${pad('kind', 7)}${pad('prompt tok', 12)}${pad('gen tok', 9)}${pad('TTFT ms', 10)}${pad('tok/s', 9)}${pad('e2e ms', 9)}` +
      `${pad('TTFT ×direct', 14)}${pad('e2e ×direct', 13)}${pad('TTFT +ms', 10)}e2e +ms`,
  );
  const direct = rows[0];
  for (const kind of ['text', 'image']) {
    const base = {
      ttft: median(direct.results[kind].map((r) => r.ttftMs)),
      e2e: median(direct.results[kind].map((r) => r.e2eMs)),
    };
    for (const row of rows) {
      const rs = row.results[kind];
      const ttft = median(rs.map((r) => r.ttftMs));
      const e2e = median(rs.map((r) => r.e2eMs));
      console.log(
        `${pad(row.name, 18)}${pad(kind === 'text' ? 'text' : 'image', 7)}${pad(median(rs.map((r) => r.promptTokens)), 12)}` +
          `${pad(median(rs.map((r) => r.tokens)), 9)}${pad(num(ttft), 10)}${pad(num(median(rs.map((r) => r.tps))), 9)}${pad(num(e2e), 9)}` +
          `${pad(row === direct ? '1.00' : num(ttft / base.ttft, 2), 14)}${pad(row === direct ? '1.00' : num(e2e / base.e2e, 2), 13)}` +
          `${pad(row === direct ? '0' : num(ttft - base.ttft), 10)}${row === direct ? '0' : num(e2e - base.e2e)}`,
      );
    }
  }
  console.log(
    '\nmedians of the rounds; TTFT = send to first visible content; tok/s = completion tokens after the first / time after the first; ' +
      "ratios > 1 and +ms are the front's cost (a fixed few ms a request weighs heavily on the tiny model's " +
      `millisecond replies, little on a real model's). Load after: ${loadavg()[0].toFixed(2)}`,
  );
  stop();
  await sleep(200);
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  stopping = true;
  process.exit(1);
});
