// The speech-to-text service's speed, by hand: `npx tsc -b services/stt && node test/bench/subservices/stt.js`.
//
// Starts the built service (services/stt/dist/main.js) on a free port, as the operator and the
// runner do, and over a real socket:
// 1. word error rate of pocketsphinx on the five LibriVox excerpts (real recordings);
// 2. per-request latency p50/p95 and throughput (requests/s, audio seconds/s) on one 3 s recording
//    with 1 and then 2 requests in flight (MAX_CONCURRENCY 2, two pocketsphinx processes warm);
// 3. the same requests one at a time on a service started with POCKETSPHINX_WARM=0 (a process and
//    a model load per request): the warm-vs-cold ratio.
//
// The recordings come from pocketsphinx's PyPI source archive, fetched by the tests into
// $CLINICALSUITE_HOME/fixtures/stt (run `npx jest test/stt/errors.test.ts` once first).
// 4. Whisper (whisper.cpp): latency and throughput of `vi` requests at concurrency 1 and 2 on the
//    tiny generated model the tests write (test/stt/tiny-whisper-ggml.ts: Whisper's layout, random
//    weights). NOT A QUALITY FIGURE, and not the speed of a real model either (4 layers, width 64): it
//    measures the service's path (decode, child process, whisper.cpp's mel, encoder and decoder loop
//    with its temperature fallbacks). BENCH_WHISPER_MODEL=/path/ggml-base.bin runs a real model instead.
//
// Env: BENCH_REQUESTS (12 per level), BENCH_WHISPER_REQUESTS (4 per level), BENCH_WHISPER_MODEL.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const root = new URL('../../../', import.meta.url).pathname;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? '12');
const dir = join(
  process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'),
  'fixtures',
  'stt',
  'librivox',
);
const IDS = ['0870', '0880', '0890', '0920', '0930'];
const wav = (id) => join(dir, `sense_and_sensibility_01_austen_64kb-${id}.wav`);
if (!IDS.every((id) => existsSync(wav(id)))) {
  console.error(
    `The LibriVox recordings are missing under ${dir}: run \`npx jest test/stt/errors.test.ts\` once.`,
  );
  process.exit(1);
}

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });

async function start(env) {
  const port = await freePort();
  const child = spawn(process.execPath, [`${root}services/stt/dist/main.js`], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MAX_CONCURRENCY: '2',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  for (;;) {
    const ok = await fetch(`${url}/`).then(
      async (r) => (await r.json()).status === 'ready',
      () => false,
    );
    if (ok) break;
    if (performance.now() - t0 > 60_000) throw new Error('the service did not become ready in 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    readyMs: performance.now() - t0,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

async function post(url, path, language = 'en') {
  const form = new FormData();
  form.append('language', language);
  form.append('file', new Blob([readFileSync(path)]), 'audio.wav');
  const started = performance.now();
  const res = await fetch(`${url}/transcribe`, { method: 'POST', body: form });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(body)}`);
  return { body, ms: performance.now() - started };
}

function words(text) {
  return text
    .toLowerCase()
    .replace(/\bmr\b\.?/g, 'mister')
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}
function edits(ref, hyp) {
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++)
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[hyp.length];
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function level(url, concurrency, path, n, language = 'en') {
  const latencies = [];
  let audio = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const { body, ms } = await post(url, path, language);
        latencies.push(ms);
        audio += body.duration_seconds;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    p50: pct(latencies, 50),
    p95: pct(latencies, 95),
    rps: n / seconds,
    audioPerSecond: audio / seconds,
  };
}

const warm = await start({});
let cold;
let whisper;
try {
  console.log(
    `stt ready in ${(warm.readyMs / 1000).toFixed(1)} s (load average ${loadavg()[0].toFixed(2)}, ${REQUESTS} requests per level)`,
  );
  let errors = 0;
  let total = 0;
  for (const id of IDS) {
    const ref = words(readFileSync(join(dir, `sense_and_sensibility_01_austen_64kb-${id}.txt`), 'utf8'));
    const { body } = await post(warm.url, wav(id));
    errors += edits(ref, words(body.text));
    total += ref.length;
  }
  console.log(
    `pocketsphinx WER on 5 LibriVox excerpts: ${(errors / total).toFixed(3)} (${errors}/${total} words)`,
  );

  const sample = wav('0880');
  await post(warm.url, sample); // warm-up
  const rows = [];
  for (const c of [1, 2]) rows.push({ c, ...(await level(warm.url, c, sample, REQUESTS)) });
  console.log('warm pocketsphinx, 2.99 s recording:');
  for (const r of rows) {
    console.log(
      `  concurrency ${r.c}: p50 ${r.p50.toFixed(0)} ms, p95 ${r.p95.toFixed(0)} ms, ` +
        `${r.rps.toFixed(2)} req/s, ${r.audioPerSecond.toFixed(2)} audio s/s`,
    );
  }
  await warm.stop();
  cold = await start({ POCKETSPHINX_WARM: '0' });
  await post(cold.url, sample);
  const c1 = await level(cold.url, 1, sample, REQUESTS);
  console.log(
    `cold pocketsphinx (POCKETSPHINX_WARM=0), concurrency 1: p50 ${c1.p50.toFixed(0)} ms, p95 ${c1.p95.toFixed(0)} ms, ${c1.rps.toFixed(2)} req/s`,
  );
  const w1 = rows[0];
  console.log(
    `warm vs cold at concurrency 1: p50 ${w1.p50.toFixed(0)} vs ${c1.p50.toFixed(0)} ms, ` +
      `cold/warm ratio ${(c1.p50 / w1.p50).toFixed(2)}, saving ${(c1.p50 - w1.p50).toFixed(0)} ms per request`,
  );
  await cold.stop();

  const tinyDir = join(dir, '..', 'tiny-whisper');
  const tiny = existsSync(tinyDir)
    ? readdirSync(tinyDir).find((f) => f.startsWith('ggml-tiny-random-multilingual-') && f.endsWith('.bin'))
    : undefined;
  const model = process.env.BENCH_WHISPER_MODEL ?? (tiny === undefined ? undefined : join(tinyDir, tiny));
  if (model === undefined) {
    console.log('whisper: skipped (run `npx jest test/stt/whisper.test.ts` once to write the tiny model)');
  } else {
    const label =
      process.env.BENCH_WHISPER_MODEL === undefined
        ? "tiny RANDOM-WEIGHT model (not a quality figure, not a real model's speed)"
        : model;
    const n = Number(process.env.BENCH_WHISPER_REQUESTS ?? '4');
    whisper = await start({ STT_WHISPER_MODEL: model, STT_POCKETSPHINX: 'false', STT_WHISPER_THREADS: '2' });
    console.log(
      `whisper.cpp ready in ${(whisper.readyMs / 1000).toFixed(1)} s; ${label}, vi, 2.99 s recording:`,
    );
    await post(whisper.url, sample, 'vi');
    for (const c of [1, 2]) {
      const r = await level(whisper.url, c, sample, n, 'vi');
      console.log(
        `  concurrency ${c} (STT_WHISPER_PROCESSES 1): p50 ${r.p50.toFixed(0)} ms, p95 ${r.p95.toFixed(0)} ms, ` +
          `${r.rps.toFixed(2)} req/s, ${r.audioPerSecond.toFixed(2)} audio s/s`,
      );
    }
  }
} finally {
  await warm.stop().catch(() => undefined);
  await cold?.stop();
  await whisper?.stop();
}
