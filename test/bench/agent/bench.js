// The agent's own cost (issue 7), in one run: the latency it adds to a non-streamed call over
// calling the text LLM service directly (p50, p99; target < 2 ms at p50), and the delay it adds to
// each streamed chunk.
// Run by hand: `npm run bench:agent` (~1 min). Needs the `llm` or `llm-base` model
// (`npm run models -- fetch llm-base`).
//
// Non-streamed: services/llm/dist/main.js (the real small model, max_tokens 1, greedy) called
// directly and through services/agent/dist/main.js (`/v1/chat/completions`, model alpha4_service),
// interleaved request by request so both see the same machine; the added latency is the difference
// of the two distributions' percentiles, and of each pair.
// The same through an upstream in this process that answers at once: the agent's cost without the
// LLM's variance around it.
// Streamed: the agent's `beta_service` upstream is a chat-completions SSE server in this process
// that stamps every chunk with the time it wrote it; chunks are read directly from it and through
// the agent, and each chunk's delay is its arrival time minus its stamp (one clock: this process).
//
// Env: BENCH_ROUNDS (300 pairs), BENCH_CHUNKS (40 chunks a stream), BENCH_STREAMS (20),
// BENCH_THREADS (the LLM's threads, 1), MODEL_PATH.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';
import { detectByRules } from '../../../services/agent/dist/domain/intent/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '300');
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? '40');
const STREAMS = Number(process.env.BENCH_STREAMS ?? '20');
// One llama.cpp thread: on a 2-core machine the other core is left to the agent, as it would have
// its own CPU in a cluster (with both, llama.cpp's spinning threads take the agent's turns and the
// benchmark measures scheduling, not the agent).
const THREADS = process.env.BENCH_THREADS ?? '1';
const LLM_TOKEN = 'bench-token-llm';
const AGENT_TOKEN = 'bench-token-agent-0123456789';
const root = new URL('../../../', import.meta.url).pathname;
// The instruction-tuned `llm` model, else the base model of the same size (`llm-base`): the agent's
// cost does not depend on what the model says.
const modelsDir = defaultModelsDir(process.env);
const modelPath =
  process.env.MODEL_PATH ??
  [MODEL_MANIFEST['llm'], MODEL_MANIFEST['llm-base']]
    .map((m) => resolveModelPath(modelsDir, m))
    .find((p) => existsSync(p)) ??
  resolveModelPath(modelsDir, MODEL_MANIFEST['llm']);
if (!existsSync(modelPath)) {
  console.error(`no model at ${modelPath}: run \`npm run models -- fetch llm-base\` or set MODEL_PATH`);
  process.exit(1);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const children = [];
function start(name, entry, env) {
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'warn', NVIDIA_SMI_PATH: '/nonexistent', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  child.on('exit', (code) => {
    if (code !== null && code !== 0) console.error(`${name} exited with ${code}`);
  });
  return child;
}
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

async function waitHealthy(url, headers = {}) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/health`, { headers })).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not become healthy`);
}

// ---- the stamping upstream: OpenAI-style SSE, each chunk's content is the time it was written.
const stamp = createServer((req, res) => {
  if (req.url === '/health' || req.url === '/v1/models') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/health' ? { status: 'healthy' } : { data: [{ id: 'stamp' }] }));
    return;
  }
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', async () => {
    if (JSON.parse(Buffer.concat(parts).toString()).stream !== true) {
      // Non-streamed: an instant completion (the agent's cost without the LLM's noise).
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'stamp',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.socket.setNoDelay(true);
    const chunk = (delta, finish) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'stamp', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    for (let i = 0; i < CHUNKS; i++) {
      await sleep(2);
      res.write(chunk({ content: `${performance.now().toFixed(4)};` }, null));
    }
    res.write(chunk({}, 'stop'));
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((r) => stamp.listen(0, '127.0.0.1', r));
const stampUrl = `http://127.0.0.1:${stamp.address().port}`;

const llmPort = await freePort();
const agentPort = await freePort();
const llmUrl = `http://127.0.0.1:${llmPort}`;
const agentUrl = `http://127.0.0.1:${agentPort}`;
start('llm', `${root}services/llm/dist/main.js`, {
  PORT: String(llmPort),
  API_TOKEN: LLM_TOKEN,
  MODEL_PATH: modelPath,
  GPU: 'false',
  THREADS,
});
start('agent', `${root}services/agent/dist/main.js`, {
  PORT: String(agentPort),
  AI_AGENT_API_TOKEN: AGENT_TOKEN,
  LLM_URL: llmUrl,
  API_TOKEN: LLM_TOKEN,
  AGENT_BETA_URL: stampUrl,
  AGENT_LLM_PROBE_MS: '60000',
});
await waitHealthy(llmUrl, { authorization: `Bearer ${LLM_TOKEN}` });
await waitHealthy(agentUrl);

const body = (model) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1, temperature: 0 });
async function timed(url, token, payload) {
  const t = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: payload,
  });
  await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return performance.now() - t;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f = (x) => x.toFixed(2).padStart(8);

// Warm both paths (connections, the model's first decode).
for (let i = 0; i < 20; i++) {
  await timed(llmUrl, LLM_TOKEN, body('alpha-2-9b-it'));
  await timed(agentUrl, AGENT_TOKEN, body('alpha4_service'));
}
const direct = [];
const via = [];
const pairs = [];
for (let i = 0; i < ROUNDS; i++) {
  // Alternate which goes first so neither always follows the other.
  const first = i % 2 === 0;
  const a = first ? await timed(llmUrl, LLM_TOKEN, body('alpha-2-9b-it')) : undefined;
  const b = await timed(agentUrl, AGENT_TOKEN, body('alpha4_service'));
  const d = a ?? (await timed(llmUrl, LLM_TOKEN, body('alpha-2-9b-it')));
  direct.push(d);
  via.push(b);
  pairs.push(b - d);
}

// Streams: read each chunk's stamp and its arrival.
async function chunkDelays(url, token, model) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'go' }],
      max_tokens: 64,
      stream: true,
    }),
  });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const delays = [];
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    const now = performance.now();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice(0, end).replace(/^data: /, '');
      buffer = buffer.slice(end + 2);
      if (data === '[DONE]') continue;
      const content = JSON.parse(data).choices?.[0]?.delta?.content ?? '';
      for (const s of content.split(';').filter(Boolean)) delays.push(now - Number(s));
    }
  }
  return delays;
}
// The same pairs against an upstream that answers at once: the agent's added latency without the
// LLM's own variance (a few ms from one call to the next) around it.
const fastDirect = [];
const fastVia = [];
for (let i = 0; i < ROUNDS * 2; i++) {
  fastDirect.push(await timed(stampUrl, 'none', body('stamp')));
  fastVia.push(await timed(agentUrl, AGENT_TOKEN, body('beta_service')));
}

const directChunks = [];
const viaChunks = [];
for (let i = 0; i < STREAMS; i++) {
  directChunks.push(...(await chunkDelays(stampUrl, 'none', 'stamp')));
  viaChunks.push(...(await chunkDelays(agentUrl, AGENT_TOKEN, 'beta_service')));
}

console.log(
  `agent benchmark: ${ROUNDS} non-streamed pairs, ${STREAMS} streams x ${CHUNKS} chunks; load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
console.log(`model ${modelPath}, llm threads ${THREADS}`);
console.log('');
console.log('non-streamed (ms)            p50      p99');
console.log(`llm direct               ${f(pct(direct, 50))} ${f(pct(direct, 99))}`);
console.log(`through the agent        ${f(pct(via, 50))} ${f(pct(via, 99))}`);
console.log(
  `added (percentiles)      ${f(pct(via, 50) - pct(direct, 50))} ${f(pct(via, 99) - pct(direct, 99))}`,
);
console.log(`added (per pair)         ${f(pct(pairs, 50))} ${f(pct(pairs, 99))}`);
console.log(
  `added (means)            ${f(via.reduce((a, b) => a + b, 0) / via.length - direct.reduce((a, b) => a + b, 0) / direct.length)}`,
);
console.log(`ratio agent/direct p50   ${(pct(via, 50) / pct(direct, 50)).toFixed(3)}x`);
console.log('');
console.log('non-streamed, instant upstream (ms)');
console.log(`upstream direct          ${f(pct(fastDirect, 50))} ${f(pct(fastDirect, 99))}`);
console.log(`through the agent        ${f(pct(fastVia, 50))} ${f(pct(fastVia, 99))}`);
console.log(
  `added (percentiles)      ${f(pct(fastVia, 50) - pct(fastDirect, 50))} ${f(pct(fastVia, 99) - pct(fastDirect, 99))}`,
);
console.log('');
console.log('streamed chunk delay (ms)    p50      p99');
console.log(`upstream direct          ${f(pct(directChunks, 50))} ${f(pct(directChunks, 99))}`);
console.log(`through the agent        ${f(pct(viaChunks, 50))} ${f(pct(viaChunks, 99))}`);
console.log(
  `added per chunk          ${f(pct(viaChunks, 50) - pct(directChunks, 50))} ${f(pct(viaChunks, 99) - pct(directChunks, 99))}`,
);
// The agent's own account: its time per call minus the time it waited on the upstream.
const metricsText = await (await fetch(`${agentUrl}/metrics`)).text();
const sample = (name) => {
  const line = metricsText.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ').pop());
};
const ownMs = (sample('agent_overhead_seconds_sum') / sample('agent_overhead_seconds_count')) * 1000;
console.log('');
console.log(`the agent's own time per call (agent_overhead_seconds, mean): ${ownMs.toFixed(2)} ms`);
const sampleOf = (name, label) => {
  const line = metricsText.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return line === undefined ? NaN : Number(line.split(' ').pop());
};
const waitMs =
  (sampleOf('agent_upstream_request_duration_seconds_sum', 'alpha4_service') /
    sampleOf('agent_upstream_request_duration_seconds_count', 'alpha4_service')) *
  1000;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  `the agent's wait on the LLM (mean): ${waitMs.toFixed(2)} ms; this client's direct call (mean): ${mean(direct).toFixed(2)} ms`,
);
// The intent rules (the part of /run's work that chat-completions skip), in this process.
const table = JSON.parse(readFileSync(new URL('../../agent/intent-table.json', import.meta.url), 'utf8'));
const rows = (Array.isArray(table) ? table : table.rows).map((r) => [r.message, r.hints]);
for (let i = 0; i < 20; i++) for (const [m, h] of rows) detectByRules(m, h);
const ruleTimes = [];
for (let i = 0; i < 10; i++)
  for (const [m, h] of rows) {
    const t = performance.now();
    detectByRules(m, h);
    ruleTimes.push(performance.now() - t);
  }
console.log(
  `intent rules per message (ms): p50 ${pct(ruleTimes, 50).toFixed(3)}, p99 ${pct(ruleTimes, 99).toFixed(3)} (budget 0.2)`,
);
const added = pct(via, 50) - pct(direct, 50);
const fastAdded = pct(fastVia, 50) - pct(fastDirect, 50);
console.log('');
console.log(
  `target: added p50 < 2 ms non-streamed: ${added < 2 ? 'PASS' : 'FAIL'} over the LLM (${added.toFixed(2)} ms), ${fastAdded < 2 ? 'PASS' : 'FAIL'} over the instant upstream (${fastAdded.toFixed(2)} ms)`,
);
stamp.close();
process.exit(0);
