// Both face detectors (BlazeFace, RetinaFace) on the same real photographs, by hand:
// `node test/bench/face/detectors.js` after `npm run build` (~20 s on 2 cores).
//
// Ground truth: dlib's examples/faces/{training,testing}_with_face_landmarks.xml (PASCAL VOC photos,
// 43 faces in 9 images, 68 points each from dlib's shape_predictor_68_face_landmarks, i.e. a
// strong landmarker's output checked by dlib's authors, not hand labels), reduced to the points
// both detectors give: eye centres (means of 36-41 and 42-47), nose tip (30), mouth centre
// (mean of 48 and 54), plus the mouth corners for RetinaFace. A face is found when a detection's box
// holds its eye and mouth centres and the detection's centre lies in its box. The landmark error
// is the mean point distance over the inter-ocular distance (NME), for the found faces.
// Also: faces found in the single-person photos, in the dogs photo (none expected), and the
// detection time per image (median of 5 runs, FACE_THREADS 1).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel, resolveModelPath } from '@clinicalsuite/kit/models';

const root = new URL('../../../', import.meta.url).pathname;
const { loadSession } = await import(`${root}services/face/dist/adapters/onnx.js`);
const { faceDetector, DEFAULT_MIN_SCORE, DETECTOR_MODEL_IDS } = await import(
  `${root}services/face/dist/adapters/detector.js`
);
const { loadFaceEngine } = await import(`${root}services/face/dist/adapters/face-engine.js`);
const { decodeImage } = await import(`${root}services/face/dist/adapters/image.js`);

const MIN_SCORE = process.env.BENCH_MIN_SCORE === undefined ? undefined : Number(process.env.BENCH_MIN_SCORE);
const INPUT_SIZE = Number(process.env.BENCH_INPUT_SIZE ?? '640');
const dir = join(
  process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'),
  'fixtures',
  'faces',
);
if (!existsSync(join(dir, 'dlib', 'testing_with_face_landmarks.xml'))) {
  console.error(`${dir} lacks the photos: run the face tests once (they fetch them)`);
  process.exit(1);
}

/** The dlib XML's faces: image file, box, 68 points. */
function groundTruth() {
  const faces = new Map();
  for (const name of ['training_with_face_landmarks.xml', 'testing_with_face_landmarks.xml']) {
    const xml = readFileSync(join(dir, 'dlib', name), 'latin1');
    for (const image of xml.matchAll(/<image file='([^']+)'[^>]*>([\s\S]*?)<\/image>/g)) {
      const list = faces.get(image[1]) ?? [];
      for (const box of image[2].matchAll(
        /<box top='(\d+)' left='(\d+)' width='(\d+)' height='(\d+)'[^>]*>([\s\S]*?)<\/box>/g,
      )) {
        const pts = [];
        for (const p of box[5].matchAll(/<part name='(\d+)' x='(-?\d+)' y='(-?\d+)'\/>/g))
          pts[Number(p[1])] = { x: Number(p[2]), y: Number(p[3]) };
        const [top, left, width, height] = box.slice(1, 5).map(Number);
        if (pts.length !== 68) continue;
        const mean = (ids) => ({
          x: ids.reduce((s, i) => s + pts[i].x, 0) / ids.length,
          y: ids.reduce((s, i) => s + pts[i].y, 0) / ids.length,
        });
        const leftEye = mean([36, 37, 38, 39, 40, 41]);
        const rightEye = mean([42, 43, 44, 45, 46, 47]);
        list.push({
          box: { x1: left, y1: top, x2: left + width, y2: top + height },
          five: [leftEye, rightEye, pts[30], pts[48], pts[54]],
        });
      }
      faces.set(image[1], list);
    }
  }
  return faces;
}

const inside = (p, b) => p.x >= b.x1 && p.x <= b.x2 && p.y >= b.y1 && p.y <= b.y2;
const dist = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);
const mid = (a, b) => ({ x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 });
/** Eyes, nose, mouth centre of a detection, whatever its layout. */
function four(d) {
  const [e1, e2, nose, m1, m2] = d.landmarks;
  return d.layout === 'five' ? [e1, e2, nose, mid(m1, m2)] : [e1, e2, nose, m1];
}

const modelsDir = defaultModelsDir(process.env);
const gt = groundTruth();
const extraPhotos = {
  'sdist/obama.jpg': 1,
  'sdist/obama2.jpg': 1,
  'sdist/obama3.jpg': 1,
  'sdist/biden.jpg': 1,
  'dlib/Tom_Cruise_avp_2014_4.jpg': 1,
  'dlib/dogs.jpg': 0,
};
const OBAMA = [
  'obama.jpg',
  'obama2.jpg',
  'obama3.jpg',
  'obama_partial_face.jpg',
  'obama_partial_face2.jpg',
  '32bit.png',
];
const STRANGERS = [
  'sdist/biden.jpg',
  ...readdirSync(join(dir, 'dlib'))
    .filter((f) => f.endsWith('.jpg') && f !== 'dogs.jpg')
    .map((f) => `dlib/${f}`),
];
const rows = [];
for (const kind of ['blazeface', 'retinaface']) {
  const entry = MODEL_MANIFEST[DETECTOR_MODEL_IDS[kind]];
  await ensureModel(entry, { modelsDir });
  const { session } = await loadSession(resolveModelPath(modelsDir, entry), { device: 'cpu', threads: 1 });
  const minScore = MIN_SCORE ?? DEFAULT_MIN_SCORE[kind];
  const detector = faceDetector(session, { kind, minScore, inputSize: INPUT_SIZE });
  let total = 0;
  let found = 0;
  let extra = 0;
  const nme4 = [];
  const nme5 = [];
  const times = [];
  const time = async (image) => {
    const runs = [];
    let out;
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      out = await detector.detect(image);
      runs.push(performance.now() - t0);
    }
    times.push(runs.sort((a, b) => a - b)[2]);
    return out;
  };
  for (const [file, faces] of gt) {
    const image = await decodeImage(readFileSync(join(dir, 'dlib', file)), file);
    const dets = await time(image);
    const used = new Set();
    for (const face of faces) {
      total++;
      const [le, re, nose, m1, m2] = face.five;
      const mouth = mid(m1, m2);
      const candidates = dets
        .map((d, i) => ({ d, i }))
        .filter(
          ({ d, i }) =>
            !used.has(i) &&
            inside(le, d.box) &&
            inside(re, d.box) &&
            inside(mouth, d.box) &&
            inside(mid({ x: d.box.x1, y: d.box.y1 }, { x: d.box.x2, y: d.box.y2 }), face.box),
        );
      if (candidates.length === 0) continue;
      const inter = dist(le, re);
      const best = candidates
        .map(({ d, i }) => ({
          d,
          i,
          err: four(d).reduce((s, p, k) => s + dist(p, [le, re, nose, mouth][k]), 0) / 4 / inter,
        }))
        .sort((a, b) => a.err - b.err)[0];
      used.add(best.i);
      found++;
      nme4.push(best.err);
      if (best.d.layout === 'five')
        nme5.push(best.d.landmarks.reduce((s, p, k) => s + dist(p, face.five[k]), 0) / 5 / inter);
    }
    extra += dets.length - used.size;
  }
  const others = [];
  for (const [file, expected] of Object.entries(extraPhotos)) {
    const image = await decodeImage(readFileSync(join(dir, file)), file);
    const dets = await time(image);
    others.push(`${file.split('/')[1]} ${dets.length}/${expected}`);
  }
  await session.release();
  // Recognition through each detector's alignment, with the default recognizer: cosine between
  // the six photos of Barack Obama (15 pairs, higher is better) and between them and every other
  // face of the set (Biden and the dlib photos, lower is better).
  await ensureModel(MODEL_MANIFEST['face-recognizer'], { modelsDir });
  const engine = await loadFaceEngine({
    detectorPath: resolveModelPath(modelsDir, entry),
    recognizerPath: resolveModelPath(modelsDir, MODEL_MANIFEST['face-recognizer']),
    device: 'cpu',
    threads: 1,
    detector: { kind, minScore, inputSize: INPUT_SIZE },
    minFaceSize: 24,
    recognizer: { channels: 'rgb', mean: 127.5, std: 128 },
  });
  const embed = async (path) =>
    (await engine.analyze(await decodeImage(readFileSync(path), path))).faces.map((f) => f.embedding);
  const obama = [];
  for (const f of OBAMA) obama.push(...(await embed(join(dir, 'sdist', f))).slice(0, 1));
  const strangers = [];
  for (const f of STRANGERS) strangers.push(...(await embed(join(dir, f))));
  await engine.dispose();
  const cos = (x, y) => x.reduce((sum, v, i) => sum + v * y[i], 0);
  const same = obama.flatMap((x, i) => obama.slice(i + 1).map((y) => cos(x, y)));
  const different = obama.flatMap((x) => strangers.map((y) => cos(x, y)));
  const mean = (xs) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  rows.push({
    detector: kind,
    'min score': minScore,
    found: `${found}/${total}`,
    'extra detections': extra,
    'NME 4 pts': mean(nme4).toFixed(3),
    'NME 5 pts': nme5.length ? mean(nme5).toFixed(3) : '-',
    'single photos (found/expected)': others.join(', '),
    'ms/image (median)': median(times).toFixed(1),
    'same person cos min/mean': `${Math.min(...same).toFixed(3)}/${mean(same).toFixed(3)} (${same.length} pairs)`,
    'different cos max/mean': `${Math.max(...different).toFixed(3)}/${mean(different).toFixed(3)} (${different.length} pairs)`,
  });
}
console.log(`RetinaFace input ${INPUT_SIZE}px, onnxruntime CPU, 1 thread`);
for (const r of rows) console.log(JSON.stringify(r));
