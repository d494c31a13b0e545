// The TTS service's speed, by hand: `npm run build && node test/bench/subservices/tts.js` (~1 min).
//
// Starts the built service (services/tts/dist/main.js) on a free port, as the operator and the
// runner do (MAX_CONCURRENCY 2), and over a real socket, for each engine it has (espeak-ng vi and
// en; the Piper English voice when the models directory holds it: `npm run models -- fetch
// tts-voice-en` and `tts-voice-en-config`), with 1 and then 2 requests in flight:
// per-request latency p50/p95, throughput (requests/s) and real-time factor (seconds of audio
// made per second of wall time; higher is faster).
//
// Env: BENCH_REQUESTS (16 per row), MODELS_DIR (default ~/.cache/clinicalsuite/models).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

const root = new URL('../../../', import.meta.url).pathname;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? '16');

// ~300 characters each: a short clinical note read back to a patient.
const TEXTS = {
  vi:
    'Bệnh nhân nam, bốn mươi hai tuổi, sốt cao ba ngày, kèm theo ho khan và đau họng. ' +
    'Huyết áp một trăm hai mươi trên tám mươi, mạch chín mươi lần mỗi phút. ' +
    'Uống thuốc hạ sốt mỗi sáu giờ khi sốt trên ba mươi tám độ rưỡi, uống nhiều nước và tái khám sau ba ngày.',
  en:
    'The patient is a forty two year old man with a high fever for three days, a dry cough and a sore throat. ' +
    'Blood pressure is one hundred twenty over eighty, pulse ninety per minute. ' +
    'Take the fever medicine every six hours above thirty eight and a half degrees, drink plenty of water and come back in three days.',
};

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const child = spawn(process.execPath, [`${root}services/tts/dist/main.js`], {
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', MAX_CONCURRENCY: '2', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const url = `http://127.0.0.1:${port}`;
try {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the service did not become healthy within 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
  const status = await (await fetch(`${url}/status`)).json();
  const piper = status.engines.piper.voices;
  console.log(
    `tts ${status.version}: espeak-ng ${status.engines.espeak_ng.version}; Piper voices: ` +
      (piper.length === 0 ? 'none' : piper.map((v) => `${v.language}=${v.voice}`).join(', ')),
  );

  const rows = [
    { label: 'espeak-ng vi', language: 'vi', engine: 'espeak' },
    { label: 'espeak-ng en', language: 'en', engine: 'espeak' },
    ...piper.map((v) => ({
      label: `piper ${v.language} (${v.voice})`,
      language: v.language,
      engine: 'piper',
    })),
  ];

  const speak = async (row) => {
    const started = performance.now();
    const res = await fetch(`${url}/tts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: TEXTS[row.language], language: row.language, engine: row.engine }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`${row.label}: HTTP ${res.status} ${bytes.toString('utf8')}`);
    return { ms: performance.now() - started, audio: Number(res.headers.get('x-audio-duration-seconds')) };
  };
  const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

  console.log(
    `\n${REQUESTS} requests per row, ${TEXTS.vi.length} (vi) / ${TEXTS.en.length} (en) characters each`,
  );
  console.log(
    'engine                          in flight   p50 ms   p95 ms    req/s   audio s   RTF (audio s / wall s)',
  );
  for (const row of rows) {
    await speak(row); // warm
    for (const concurrency of [1, 2]) {
      const results = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < REQUESTS) {
            next++;
            results.push(await speak(row));
          }
        }),
      );
      const wall = (performance.now() - started) / 1000;
      const ms = results.map((r) => r.ms).sort((a, b) => a - b);
      const audio = results.reduce((s, r) => s + r.audio, 0);
      console.log(
        `${row.label.padEnd(32)}${String(concurrency).padStart(9)}${pct(ms, 50).toFixed(0).padStart(9)}` +
          `${pct(ms, 95).toFixed(0).padStart(9)}${(results.length / wall).toFixed(2).padStart(9)}` +
          `${(audio / results.length).toFixed(2).padStart(10)}${(audio / wall).toFixed(1).padStart(10)}`,
      );
    }
  }
  console.log(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (2 cores shared with other work)`,
  );
} finally {
  child.kill('SIGTERM');
}
