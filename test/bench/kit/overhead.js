// The kit's overhead per request against a bare Express handler, measured in the same run, and
// requests/s with as many clients as the gate admits. Run by hand: `npm run bench:kit`.
// Target (issue 2): under 0.3 ms p50 added.
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const LIMIT = 4;
const SEQ_REQUESTS = Number(process.env.BENCH_REQUESTS ?? '4000');
const THROUGHPUT_MS = Number(process.env.BENCH_THROUGHPUT_MS ?? '4000');
const payload = JSON.stringify({ prompt: 'Bệnh nhân nam 54 tuổi, đau ngực trái 2 giờ', max_tokens: 64 });

const child = spawn(
  process.execPath,
  [
    ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    new URL('./servers.js', import.meta.url).pathname,
  ],
  {
    env: { ...process.env, BENCH_LIMIT: String(LIMIT) },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const [line] = await once(createInterface({ input: child.stdout }), 'line');
const ports = JSON.parse(line);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function call(port, auth) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/echo',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...(auth ? { authorization: 'Bearer bench-token' } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function latencies(port, auth, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call(port, auth);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

const pct = (xs, p) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function throughput(port, auth) {
  let done = 0;
  const end = Date.now() + THROUGHPUT_MS;
  await Promise.all(
    Array.from({ length: LIMIT }, async () => {
      while (Date.now() < end) {
        await call(port, auth);
        done += 1;
      }
    }),
  );
  return done / (THROUGHPUT_MS / 1000);
}

// Warm both, then interleave rounds so drift hits both alike.
await latencies(ports.bare, false, 500);
await latencies(ports.kit, true, 500);
const bare = [];
const kit = [];
for (let round = 0; round < 4; round++) {
  bare.push(...(await latencies(ports.bare, false, SEQ_REQUESTS / 4)));
  kit.push(...(await latencies(ports.kit, true, SEQ_REQUESTS / 4)));
}
const bareRps = await throughput(ports.bare, false);
const kitRps = await throughput(ports.kit, true);
child.kill('SIGTERM');
agent.destroy();

const p50b = pct(bare, 50);
const p50k = pct(kit, 50);
const fmt = (x) => x.toFixed(3);
console.log(
  `kit overhead benchmark (${SEQ_REQUESTS} sequential requests each, interleaved; ${LIMIT} clients for throughput)`,
);
console.log(`  bare express  p50 ${fmt(p50b)} ms  p99 ${fmt(pct(bare, 99))} ms  ${bareRps.toFixed(0)} req/s`);
console.log(`  kit           p50 ${fmt(p50k)} ms  p99 ${fmt(pct(kit, 99))} ms  ${kitRps.toFixed(0)} req/s`);
console.log(
  `  added p50: ${fmt(p50k - p50b)} ms (target < 0.300 ms) -> ${p50k - p50b < 0.3 ? 'PASS' : 'FAIL'}`,
);
console.log(
  `  ratios kit/bare: p50 latency ${(p50k / p50b).toFixed(2)}x, throughput at the gate limit ${(kitRps / bareRps).toFixed(2)}x`,
);
