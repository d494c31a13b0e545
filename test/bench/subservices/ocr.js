// The OCR service's speed and accuracy, by hand: `npm run build && node test/bench/subservices/ocr.js`.
//
// Starts the built service (services/ocr/dist/main.js) on a free port, as the operator and the
// runner do, and over a real socket:
// 1. character accuracy (1 - CER, diacritics included) on rendered Vietnamese and English clinical
//    notes: clean, turned 90/180/270°, skewed 3.5-5°, small + blurred + JPEG q35, EXIF-rotated,
//    WebP, a 2-page TIFF and a 2-page PDF;
// 2. per-request latency p50/p95 and throughput (pages/s) on the Vietnamese page (1700x728 PNG,
//    vi+en) with 1 and then 2 requests in flight (MAX_CONCURRENCY 2).
//
// Env: BENCH_REQUESTS (24 per concurrency level).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { EN_NOTE, VI_NOTE, characterAccuracy, renderNote, textPdf } from '../../ocr/pages.js';

const root = new URL('../../../', import.meta.url).pathname;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? '24');

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const child = spawn(process.execPath, [`${root}services/ocr/dist/main.js`], {
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', MAX_CONCURRENCY: '2', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const url = `http://127.0.0.1:${port}`;
try {
  const t0 = performance.now();
  for (;;) {
    // GET / answers 200 with the status while starting (a 503 /health would be logged as an error).
    const ok = await fetch(`${url}/`).then(
      async (r) => (await r.json()).status === 'ready',
      () => false,
    );
    if (ok) break;
    if (performance.now() - t0 > 60_000) throw new Error('the service did not become ready in 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(
    `ocr ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (load average ${loadavg()[0].toFixed(2)})`,
  );

  const post = async (bytes, fields = {}, name = 'page.png') => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append('file', new Blob([bytes]), name);
    const started = performance.now();
    const res = await fetch(`${url}/ocr`, { method: 'POST', body: form });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(body)}`);
    return { body, ms: performance.now() - started };
  };

  const vi = await renderNote(VI_NOTE);
  const en = await renderNote(EN_NOTE);
  const VI = VI_NOTE.join('\n');
  const EN = EN_NOTE.join('\n');
  const cases = [
    ['vi clean', vi, VI],
    ['en clean', en, EN],
    ['vi turned 90', await sharp(vi).rotate(90).png().toBuffer(), VI],
    ['vi turned 180', await sharp(vi).rotate(180).png().toBuffer(), VI],
    ['en turned 270', await sharp(en).rotate(270).png().toBuffer(), EN],
    ['vi skewed 4', await sharp(vi).rotate(4, { background: '#fff' }).jpeg({ quality: 90 }).toBuffer(), VI],
    [
      'en skewed -3.5',
      await sharp(en).rotate(-3.5, { background: '#fff' }).jpeg({ quality: 90 }).toBuffer(),
      EN,
    ],
    [
      'vi small blurred q35',
      await sharp(await renderNote(VI_NOTE, { width: 900, fontSize: 17 }))
        .blur(0.8)
        .jpeg({ quality: 35 })
        .toBuffer(),
      VI,
    ],
  ];
  cases.push(
    ['en skewed 5', await sharp(en).rotate(5, { background: '#fff' }).jpeg({ quality: 90 }).toBuffer(), EN],
    [
      'vi EXIF orientation 6',
      await sharp(vi).rotate(270).jpeg().withMetadata({ orientation: 6 }).toBuffer(),
      VI,
    ],
    ['en WebP lossless', await sharp(en).webp({ lossless: true }).toBuffer(), EN],
    [
      'vi+en 2-page TIFF',
      await sharp([vi, en], { join: { animated: true } })
        .tiff()
        .toBuffer(),
      `${VI}\n\n${EN}`,
    ],
    ['en 2-page PDF 150 dpi', textPdf([EN_NOTE.slice(0, 4), EN_NOTE.slice(4)]), EN, { dpi: '150' }],
  );
  console.log('\ncharacter accuracy (1 - CER), vi+en:');
  for (const [name, bytes, truth, fields] of cases) {
    const { body, ms } = await post(bytes, fields);
    const p = body.pages[0];
    console.log(
      `  ${name.padEnd(22)} ${characterAccuracy(truth, body.text).toFixed(4)}  conf ${String(body.mean_confidence).padEnd(6)} ` +
        `turned ${String(p.rotation_applied).padStart(3)}  skew ${String(p.skew_degrees).padStart(5)}  ${ms.toFixed(0)} ms`,
    );
  }

  const pct = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  console.log(`\nlatency on the vi page (1700x728 PNG, vi+en), ${REQUESTS} requests per level:`);
  for (const concurrency of [1, 2]) {
    const times = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < REQUESTS) {
          next++;
          times.push((await post(vi)).ms);
        }
      }),
    );
    const wall = (performance.now() - started) / 1000;
    times.sort((a, b) => a - b);
    console.log(
      `  concurrency ${concurrency}: p50 ${pct(times, 0.5).toFixed(0)} ms  p95 ${pct(times, 0.95).toFixed(0)} ms  ` +
        `throughput ${(REQUESTS / wall).toFixed(2)} pages/s`,
    );
  }
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const stages = [
    ...metrics.matchAll(
      /^ocr_stage_duration_seconds_(sum|count)\{service="ocr",stage="(\w+)"\} ([\d.e+-]+)$/gm,
    ),
  ];
  const by = {};
  for (const [, kind, stage, value] of stages) (by[stage] ??= {})[kind] = Number(value);
  console.log(
    '  mean per stage: ' +
      Object.entries(by)
        .filter(([, v]) => v.count > 0)
        .map(([stage, v]) => `${stage} ${((v.sum / v.count) * 1000).toFixed(0)} ms`)
        .join(', '),
  );
  console.log(`(load average ${loadavg()[0].toFixed(2)} on a machine shared with other work)`);
} finally {
  child.kill('SIGTERM');
}
