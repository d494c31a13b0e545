// The agent's intent classification on the worst inputs found for issue 28 (regexes that backtrack):
// the classification time of each, in this process and through `/run`.
// Run by hand: `npm run bench:agent-classify` (about a minute; no model needed).
//
// In this process: IntentDetector.decide, what `/run` calls, with the keyword rules alone (the LLM
// classifier, when the rules are unsure, is a network call to the LLM, not regex work), median of
// BENCH_ROUNDS runs after one run that warms up. Through `/run`: services/agent/dist/main.js with an
// upstream in this process that answers at once, the whole request's time (p50 of BENCH_ROUNDS) and
// its status; a message over AGENT_MAX_MESSAGE_CHARS (100,000) is refused with 400 before
// classification.
//
// Env: BENCH_ROUNDS (5).
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { IntentDetector } from '../../../services/agent/dist/domain/intent/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '5');
const AGENT_TOKEN = 'bench-token-agent-0123456789';
const root = new URL('../../../', import.meta.url).pathname;

const dots = (n) => `ls ${Array.from({ length: n }, () => '........').join(' ')} !`;
const INPUTS = [
  ['dot words, 9 (the issue: 11.5 s)', dots(9)],
  ['dot words, 10 (the issue: over 100 s)', dots(10)],
  ['dot words, 20', dots(20)],
  ['dot words, 1000', dots(1000)],
  ['`--s` options, 22', `ls${' --s'.repeat(22)} !`],
  ['`--s` options, 1000', `ls${' --s'.repeat(1000)} !`],
  ['one word, 100,000 letters', 'a'.repeat(100_000)],
  ['100,000 line breaks', `m${'\n'.repeat(99_999)}`],
  ['100,000 spaces then !', `ls${' '.repeat(99_997)}!`],
  ['stack frames, 100,000 chars', `0${':at A (A'.repeat(12_499)}`],
  ['`sốt ` repeated, 100,000 chars', 'sốt '.repeat(25_000)],
  ['`!` repeated, 100,000', '!'.repeat(100_000)],
  ['a-acute by combining marks, 100,000 chars', 'a\u0301'.repeat(50_000)],
  ['emoji, 100,000 UTF-16 units', '😀'.repeat(50_000)],
  ['zero-width joiners between letters', `l\u200ds${' \u200b-\u200bl'.repeat(20_000)} !`],
  [
    'Vietnamese note, 100,000 chars',
    'Bệnh nhân nam 65 tuổi, tăng huyết áp, đau ngực, khó thở. '.repeat(1725),
  ],
  ['mixed scripts, 100,000 chars', 'Đau đầu головная боль 頭痛 صداع '.repeat(3500).slice(0, 100_000)],
  ['10 MB (the body limit; over AGENT_MAX_MESSAGE_CHARS)', 'x '.repeat(5_000_000)],
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const signal = new AbortController().signal;

// ---- in this process
const detector = new IntentDetector({ router: null, useLlm: false });
const local = [];
for (const [name, message] of INPUTS) {
  await detector.decide({ message, language: 'en' }, signal);
  const times = [];
  let decision;
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    decision = await detector.decide({ message, language: 'en' }, signal);
    times.push(performance.now() - t);
  }
  local.push({
    name,
    chars: message.length,
    ms: median(times),
    max: Math.max(...times),
    intent: decision.intent,
  });
}

// ---- through /run
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
const upstream = createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  if (req.url === '/health' || req.url === '/v1/models') {
    res.end(JSON.stringify(req.url === '/health' ? { status: 'healthy' } : { data: [{ id: 'bench' }] }));
    return;
  }
  req.resume();
  req.on('end', () =>
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        created: 0,
        model: 'bench',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    ),
  );
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
const agentPort = await freePort();
const agentUrl = `http://127.0.0.1:${agentPort}`;
const agent = spawn(process.execPath, [`${root}services/agent/dist/main.js`], {
  env: {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(agentPort),
    LOG_LEVEL: 'warn',
    NVIDIA_SMI_PATH: '/nonexistent',
    AI_AGENT_API_TOKEN: AGENT_TOKEN,
    LLM_URL: `http://127.0.0.1:${upstream.address().port}`,
    API_TOKEN: 'bench',
    AGENT_INTENT_LLM: 'false',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
process.on('exit', () => agent.kill('SIGKILL'));
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${agentUrl}/health`)).status === 200) break;
  } catch {
    // not listening yet
  }
  if (i > 300) throw new Error('the agent did not become healthy');
  await sleep(100);
}
async function run(message) {
  const t = performance.now();
  const res = await fetch(`${agentUrl}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${AGENT_TOKEN}` },
    body: JSON.stringify({ message, language: 'en' }),
  });
  const body = await res.json();
  return { ms: performance.now() - t, status: res.status, intent: body.intent ?? '-' };
}
const remote = [];
for (const [, message] of INPUTS) {
  await run(message);
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) runs.push(await run(message));
  remote.push({ ms: median(runs.map((r) => r.ms)), status: runs[0].status, intent: runs[0].intent });
}
agent.kill('SIGTERM');
upstream.close();

// ---- report
const pad = (s, n) => String(s).padEnd(n);
const num = (x, n = 9) => x.toFixed(2).padStart(n);
console.log(
  `${pad('input', 52)}${'chars'.padStart(10)}${'decide ms'.padStart(11)}${'max ms'.padStart(9)}  ${pad('intent', 14)}${'/run ms'.padStart(9)}  status`,
);
for (const [i, l] of local.entries()) {
  const r = remote[i];
  console.log(
    `${pad(l.name, 52)}${String(l.chars).padStart(10)}${num(l.ms, 11)}${num(l.max)}  ${pad(l.intent, 14)}${num(r.ms)}  ${r.status} ${r.intent}`,
  );
}
const worst = Math.max(...local.map((l) => l.max));
console.log(`\nworst classification: ${worst.toFixed(2)} ms (target < 100 ms); ${ROUNDS} rounds per input`);
