// The face service's speed (issue 5), in one run, by hand: `npm run bench:face` (~2 min).
//
// 1. detect + embed on 640x480 photos with one face: images/s through the service (HTTP
//    /recognize_faces, one request at a time and 3 at once) and through the same two ONNX models
//    called directly with onnxruntime-node in this process (letterbox, detector, 5-point
//    alignment, recognizer; no HTTP, no registry): the ratio is the service's overhead.
// 2. identification: p50/p99 of matching one face against 1k, 10k and 100k registered persons
//    (the in-memory index the service searches; random unit embeddings of the recognizer's size).
//
// Env: BENCH_THREADS (1: onnxruntime intra-op threads, the service's FACE_THREADS), BENCH_IMAGES (40),
// BENCH_DETECTOR (the service's FACE_DETECTOR: retinaface, its default, or blazeface),
// BENCH_DEVICE (cpu, or cuda: both the direct models and the service's FACE_DEVICE; needs
// onnxruntime's CUDA provider libraries beside onnxruntime-node's, see services/face/README.md).
// Both detectors' accuracy and speed on the test photos: test/bench/face/detectors.js.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel, resolveModelPath } from '@clinicalsuite/kit/models';

const root = new URL('../../../', import.meta.url).pathname;
const THREADS = Number(process.env.BENCH_THREADS ?? '1');
const IMAGES = Number(process.env.BENCH_IMAGES ?? '40');
const DETECTOR = process.env.BENCH_DETECTOR ?? 'retinaface';
const DEVICE = process.env.BENCH_DEVICE ?? 'cpu';
if (DEVICE !== 'cpu' && DEVICE !== 'cuda') {
  console.error(`BENCH_DEVICE=${DEVICE}: expected cpu or cuda`);
  process.exit(2);
}
const { loadFaceEngine } = await import(`${root}services/face/dist/adapters/face-engine.js`);
const { DEFAULT_MIN_SCORE, DETECTOR_MODEL_IDS } = await import(
  `${root}services/face/dist/adapters/detector.js`
);
if (!(DETECTOR in DETECTOR_MODEL_IDS)) {
  console.error(`BENCH_DETECTOR=${DETECTOR}: expected one of ${Object.keys(DETECTOR_MODEL_IDS).join(', ')}`);
  process.exit(1);
}
const { decodeImage } = await import(`${root}services/face/dist/adapters/image.js`);
const { People } = await import(`${root}services/face/dist/domain/people.js`);
const { l2Normalize } = await import(`${root}services/face/dist/domain/similarity.js`);
const { loadCoarseScorer } = await import(`${root}services/face/dist/adapters/ort-scorer.js`);

const modelsDir = defaultModelsDir(process.env);
const detectorId = DETECTOR_MODEL_IDS[DETECTOR];
for (const id of [detectorId, 'face-recognizer']) await ensureModel(MODEL_MANIFEST[id], { modelsDir });
const detectorPath = resolveModelPath(modelsDir, MODEL_MANIFEST[detectorId]);
const recognizerPath = resolveModelPath(modelsDir, MODEL_MANIFEST['face-recognizer']);
// The real photographs the face tests fetch (test/fixtures/photos/face-photos.ts) into the cache.
const photoDir = join(
  process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'),
  'fixtures',
  'faces',
);
const photos = {
  obama: join(photoDir, 'sdist', 'obama.jpg'),
  obama2: join(photoDir, 'sdist', 'obama2.jpg'),
  obama3: join(photoDir, 'sdist', 'obama3.jpg'),
  biden: join(photoDir, 'sdist', 'biden.jpg'),
  single: join(photoDir, 'dlib', 'Tom_Cruise_avp_2014_4.jpg'),
};
for (const path of Object.values(photos)) {
  if (!existsSync(path)) {
    console.error(
      `${path} is missing: run the face tests once (npm run test:jest -- test/face/service), they fetch the photos`,
    );
    process.exit(1);
  }
}

// 640x480 JPEGs with one face each (real photos, letterboxed).
const singles = ['obama', 'obama2', 'obama3', 'biden', 'single'];
const jpegs = await Promise.all(
  singles.map((k) =>
    sharp(readFileSync(photos[k]))
      .rotate()
      .resize(640, 480, { fit: 'contain', background: '#000' })
      .jpeg({ quality: 90 })
      .toBuffer(),
  ),
);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);

// --- direct: the same models through onnxruntime-node in this process -----------------------
const engine = await loadFaceEngine({
  detectorPath,
  recognizerPath,
  device: DEVICE,
  threads: THREADS,
  detector: { kind: DETECTOR, minScore: DEFAULT_MIN_SCORE[DETECTOR], inputSize: 640 },
  minFaceSize: 24,
  recognizer: { channels: 'rgb', mean: 127.5, std: 128 },
});
async function direct(n) {
  const t0 = performance.now();
  let faces = 0;
  for (let i = 0; i < n; i++) {
    const image = await decodeImage(jpegs[i % jpegs.length], 'bench.jpg');
    faces += (await engine.analyze(image)).faces.length;
  }
  return { ips: n / ((performance.now() - t0) / 1000), faces };
}
// Each benchmark image must hold exactly one face.
const perImage = [];
for (const jpeg of jpegs)
  perImage.push((await engine.analyze(await decodeImage(jpeg, 'bench.jpg'))).faces.length);
if (perImage.some((n) => n !== 1))
  console.warn(`faces per benchmark image (${singles.join(', ')}): ${perImage.join(', ')}`);
await direct(5);

// --- the service, as a process, through HTTP --------------------------------------------------
const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const url = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, [`${root}services/face/dist/main.js`], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'face-bench-')),
    FACE_DEVICE: DEVICE,
    FACE_THREADS: String(THREADS),
    FACE_DETECTOR: DETECTOR,
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    LOG_LEVEL: 'warn',
  },
  stdio: 'inherit',
});
for (let i = 0; ; i++) {
  const ok = await fetch(`${url}/health`).then(
    (r) => r.status === 200,
    () => false,
  );
  if (ok) break;
  if (i > 300) throw new Error('the face service did not start');
  await new Promise((r) => setTimeout(r, 100));
}
async function recognizeOnce(i) {
  const data = new FormData();
  data.append('file', new Blob([jpegs[i % jpegs.length]]), 'bench.jpg');
  const res = await fetch(`${url}/recognize_faces`, { method: 'POST', body: data });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`recognize_faces answered ${res.status}: ${body.message}`);
  return body.data.faces_detected;
}
async function service(n, concurrency) {
  const t0 = performance.now();
  let next = 0;
  let faces = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const found = await recognizeOnce(next++);
        faces += found;
      }
    }),
  );
  return { ips: n / ((performance.now() - t0) / 1000), faces };
}
await service(5, 1);

const load0 = loadavg().map(f2).join(' ');
// Interleaved, so drift in machine load hits both alike.
const rows = { direct: [], service: [], service3: [] };
for (let round = 0; round < 3; round++) {
  rows.direct.push(await direct(IMAGES / 2));
  rows.service.push(await service(IMAGES / 2, 1));
  rows.service3.push(await service(IMAGES / 2, 3));
}
child.kill('SIGTERM');
const median = (list) =>
  pct(
    list.map((r) => r.ips),
    50,
  );
const facesOk = Object.values(rows)
  .flat()
  .every((r) => r.faces === IMAGES / 2);

// --- identification at 1k / 10k / 100k --------------------------------------------------------
const dim = engine.dim;
function randomUnit() {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i++) v[i] = Math.random() * 2 - 1;
  return l2Normalize(v);
}
const coarse = await loadCoarseScorer(dim, THREADS);
const idRows = [];
for (const n of [1_000, 10_000, 100_000]) {
  const people = new People(dim, coarse.scorer);
  for (let i = 0; i < n; i++) people.add(i + 1, `p${i}`, [randomUnit()]);
  const times = [];
  for (let i = 0; i < 5; i++) await people.match([randomUnit()], 0.4);
  for (let i = 0; i < 200; i++) {
    const q = randomUnit();
    const t = performance.now();
    await people.match([q], 0.4);
    times.push(performance.now() - t);
  }
  idRows.push({ n, p50: pct(times, 50), p99: pct(times, 99) });
}
await engine.dispose();
await coarse.dispose();

console.log(
  `face benchmark: ${DETECTOR === 'retinaface' ? 'RetinaFace MobileNet-0.25 (640)' : 'BlazeFace 256'} + ${recognizerPath.split('/').pop()} (${dim}-d), onnxruntime ${engine.device}, ${THREADS} intra-op thread(s), 640x480 JPEGs with one face`,
);
console.log(
  `  load avg at start: ${load0}; ${IMAGES / 2} images per measurement, 3 rounds interleaved, medians; every image had one face: ${facesOk}`,
);
console.log(
  '  identification: exact scan below 4096 rows; above, an int8 scan on onnxruntime, then the best 32 re-scored exactly',
);
console.log(
  `  detect+embed images/s   direct onnxruntime ${f1(median(rows.direct))}   service 1 at a time ${f1(median(rows.service))}   service 3 at once ${f1(median(rows.service3))}`,
);
console.log(
  `  service / direct (1 at a time): ${f2(median(rows.service) / median(rows.direct))}x   (3 at once: ${f2(median(rows.service3) / median(rows.direct))}x)`,
);
for (const r of idRows) {
  console.log(
    `  identification of one face among ${String(r.n).padStart(6)} persons: p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms`,
  );
}
