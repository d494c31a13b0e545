// Detection recall by face size, and recognition across the same variants, on real photographs:
// `npm run bench:face-recall` (builds first; a few minutes on 2 cores). Run by hand; its table is in
// services/face/README.md ("Small faces").
//
// Photos: the face tests' (test/fixtures/photos/face-photos.ts): OpenCV's messi5.jpg, the four
// face_recognition photos (Barack Obama x3, Joe Biden), dlib's examples (43 annotated faces in 9
// photos, Tom Cruise, bald_guys.jpg). Ground truth: RetinaFace at the input size on each original
// (on the annotated photos it finds the 43 annotated faces and nothing else,
// test/face/retinaface.test.ts), so recall at 100% is 100% by construction and the figures say
// what is lost as faces shrink or change. Photos without faces: OpenCV's home.jpg and dlib's
// dogs.jpg, through every variant.
//
// Variants, made with sharp (the service's own decoder and encoder, libvips): scales 100% to 25%
// (Lanczos), each also mirrored, 20% brighter, 20% darker, re-encoded as JPEG quality 50, and
// (the issue's example) mirrored at 80% and 15% brighter; and each photo at 50% in the middle of
// a 1920x1080 grey frame (a large image with small faces).
//
// "before": the whole image at the detector's input only, faces under 24 px dropped (the service
// before FACE_SCAN_MIN_SIZE, with FACE_MIN_SIZE 24); "after": the service's defaults now (whole
// image, plus tiles when a 16 px face would be too small at the input; faces from 12 px). A face is found when a
// detection's centre lies in its box and its centre in the detection's box. Recognition: the
// found face's embedding (aligned from that detector's landmarks) against every original face's;
// right when the best is the same person at the default threshold (cosine 0.4).
//
// BENCH_SCALES (comma list), BENCH_PHOTOS (how many of the photos, for a quick run).
import { readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { MODEL_MANIFEST, defaultModelsDir, ensureModel, resolveModelPath } from '@clinicalsuite/kit/models';

const root = new URL('../../../', import.meta.url).pathname;
const { loadSession } = await import(`${root}services/face/dist/adapters/onnx.js`);
const { faceDetector, DEFAULT_MIN_SCORE, DETECTOR_MODEL_IDS } = await import(
  `${root}services/face/dist/adapters/detector.js`
);
const { decodeImage } = await import(`${root}services/face/dist/adapters/image.js`);
const { alignmentTransform, warpSimilarity } = await import(`${root}services/face/dist/domain/align.js`);
const { embedFace, recognizerInfo } = await import(`${root}services/face/dist/adapters/recognizer.js`);

const THRESHOLD = 0.4;
const SCALES = (process.env.BENCH_SCALES ?? '1,0.75,0.6,0.5,0.4,0.3,0.25').split(',').map(Number);
const dir = join(
  process.env.CLINICALSUITE_HOME ?? join(homedir(), '.cache', 'clinicalsuite'),
  'fixtures',
  'faces',
);
const dlibPhotos = readdirSync(join(dir, 'dlib'))
  .filter((f) => f.endsWith('.jpg') && f !== 'dogs.jpg')
  .map((f) => `dlib/${f}`);
const PHOTOS = [
  'opencv/messi5.jpg',
  'sdist/obama.jpg',
  'sdist/obama2.jpg',
  'sdist/obama3.jpg',
  'sdist/biden.jpg',
  ...dlibPhotos,
].slice(0, Number(process.env.BENCH_PHOTOS ?? '100'));
const EMPTY = ['opencv/home.jpg', 'dlib/dogs.jpg'];
const person = (file, i) => (file.startsWith('sdist/obama') ? 'obama' : `${file}#${String(i)}`);

/** The variants of one photo: name, scale, and the encoded image (PNG, or JPEG at quality 50). */
async function variants(bytes) {
  const meta = await sharp(bytes).rotate().metadata();
  const out = [];
  const base = (s) =>
    sharp(bytes)
      .rotate()
      .resize(Math.max(1, Math.round(meta.width * s)), null, { kernel: 'lanczos3' });
  for (const s of SCALES) {
    out.push({ name: 'plain', scale: s, flip: false, bytes: await base(s).png().toBuffer() });
    out.push({ name: 'mirrored', scale: s, flip: true, bytes: await base(s).flop().png().toBuffer() });
    out.push({
      name: '+20% light',
      scale: s,
      flip: false,
      bytes: await base(s).linear(1.2, 0).png().toBuffer(),
    });
    out.push({
      name: '-20% light',
      scale: s,
      flip: false,
      bytes: await base(s).linear(0.8, 0).png().toBuffer(),
    });
    out.push({
      name: 'JPEG q50',
      scale: s,
      flip: false,
      bytes: await base(s).jpeg({ quality: 50 }).toBuffer(),
    });
  }
  out.push({
    name: 'mirrored 80% +15%',
    scale: 0.8,
    flip: true,
    bytes: await base(0.8).flop().linear(1.15, 0).png().toBuffer(),
  });
  const half = await base(0.5).png().toBuffer();
  const hm = await sharp(half).metadata();
  const [fw, fh] = [Math.max(1920, hm.width), Math.max(1080, hm.height)];
  const left = Math.floor((fw - hm.width) / 2);
  const top = Math.floor((fh - hm.height) / 2);
  out.push({
    name: '50% in 1920x1080',
    scale: 0.5,
    flip: false,
    offset: { x: left, y: top },
    bytes: await sharp({
      create: { width: fw, height: fh, channels: 3, background: { r: 128, g: 128, b: 128 } },
    })
      .composite([{ input: half, left, top }])
      .png()
      .toBuffer(),
  });
  return { width: meta.width, out };
}

/** A ground-truth box moved into a variant (scaled, mirrored, placed in a frame). */
function place(box, v, width) {
  const s = v.scale;
  let { x1, x2 } = box;
  if (v.flip) [x1, x2] = [width - box.x2, width - box.x1];
  const ox = v.offset?.x ?? 0;
  const oy = v.offset?.y ?? 0;
  return { x1: x1 * s + ox, y1: box.y1 * s + oy, x2: x2 * s + ox, y2: box.y2 * s + oy };
}
const centre = (b) => ({ x: (b.x1 + b.x2) / 2, y: (b.y1 + b.y2) / 2 });
const inside = (p, b) => p.x >= b.x1 && p.x <= b.x2 && p.y >= b.y1 && p.y <= b.y2;
const side = (b) => Math.min(b.x2 - b.x1, b.y2 - b.y1);
const BINS = [
  [0, 12],
  [12, 16],
  [16, 20],
  [20, 24],
  [24, 32],
  [32, 48],
  [48, Infinity],
];
const binOf = (size) => BINS.findIndex(([lo, hi]) => size >= lo && size < hi);
const binName = ([lo, hi]) => (hi === Infinity ? `>= ${String(lo)}` : `${String(lo)}-${String(hi - 1)}`);
const cos = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

const modelsDir = defaultModelsDir(process.env);
const recEntry = MODEL_MANIFEST['face-recognizer'];
await ensureModel(recEntry, { modelsDir });
const recognizer = (await loadSession(resolveModelPath(modelsDir, recEntry), { device: 'cpu', threads: 1 }))
  .session;
const recInfo = recognizerInfo(recognizer);
const embed = (image, d) =>
  embedFace(recognizer, recInfo, warpSimilarity(image, alignmentTransform(d), recInfo.size), {
    channels: 'rgb',
    mean: 127.5,
    std: 128,
  });

const detectors = {};
for (const kind of ['retinaface', 'blazeface']) {
  const entry = MODEL_MANIFEST[DETECTOR_MODEL_IDS[kind]];
  await ensureModel(entry, { modelsDir });
  const { session } = await loadSession(resolveModelPath(modelsDir, entry), { device: 'cpu', threads: 1 });
  const base = { kind, minScore: DEFAULT_MIN_SCORE[kind], inputSize: 640 };
  detectors[kind] = {
    // The whole image only, faces from 24 px; and the service's defaults now.
    before: { det: faceDetector(session, { ...base, scanMinSize: 0 }), minSide: 24 },
    after: { det: faceDetector(session, { ...base, scanMinSize: 16 }), minSide: 12 },
  };
}

// Ground truth and the original faces' embeddings (per detector, through its own alignment).
const truth = new Map();
const gallery = { retinaface: [], blazeface: [] };
for (const file of PHOTOS) {
  const image = await decodeImage(readFileSync(join(dir, file)), file);
  const faces = await detectors.retinaface.before.det.detect(image);
  truth.set(file, faces);
  for (const [i, f] of faces.entries())
    gallery.retinaface.push({ id: `${file}#${String(i)}`, who: person(file, i), e: await embed(image, f) });
  const blaze = await detectors.blazeface.after.det.detect(image);
  for (const [i, f] of faces.entries()) {
    const b = blaze.find((d) => inside(centre(d.box), f.box) && inside(centre(f.box), d.box));
    if (b !== undefined)
      gallery.blazeface.push({ id: `${file}#${String(i)}`, who: person(file, i), e: await embed(image, b) });
  }
}
const gtCount = [...truth.values()].reduce((s, f) => s + f.length, 0);
console.log(
  `${String(PHOTOS.length)} photos, ${String(gtCount)} faces at 100% (RetinaFace on the originals)`,
);

const stats = {};
for (const kind of Object.keys(detectors)) {
  for (const mode of ['before', 'after']) {
    stats[`${kind} ${mode}`] = {
      bins: BINS.map(() => ({ n: 0, found: 0, right: 0, same: [] })),
      variants: {},
      extra: 0,
      empty: 0,
      ms: [],
    };
  }
}
const other = [];
const extraHits = [];
for (const file of PHOTOS) {
  process.stderr.write(`${file}\n`);
  const bytes = readFileSync(join(dir, file));
  const { width, out } = await variants(bytes);
  for (const v of out) {
    const image = await decodeImage(v.bytes, file);
    for (const [kind, modes] of Object.entries(detectors)) {
      for (const [mode, { det, minSide }] of Object.entries(modes)) {
        const st = stats[`${kind} ${mode}`];
        const t0 = performance.now();
        const dets = (await det.detect(image)).filter((d) => side(d.box) >= minSide);
        st.ms.push(performance.now() - t0);
        const used = new Set();
        for (const [i, gt] of truth.get(file).entries()) {
          const box = place(gt.box, v, width);
          const bin = binOf(box.x2 - box.x1);
          const b = st.bins[bin];
          const vs = (st.variants[v.name] ??= { n: 0, found: 0 });
          b.n++;
          vs.n++;
          const k = dets.findIndex(
            (d, j) => !used.has(j) && inside(centre(d.box), box) && inside(centre(box), d.box),
          );
          if (k < 0) continue;
          used.add(k);
          b.found++;
          vs.found++;
          const e = await embed(image, dets[k]);
          const who = person(file, i);
          let best = { c: -1, who: '' };
          for (const g of gallery[kind]) {
            const c = cos(e, g.e);
            if (g.id === `${file}#${String(i)}` && mode === 'after') b.same.push(1 - c);
            if (g.who !== who && mode === 'after') other.push(c);
            if (c > best.c) best = { c, who: g.who };
          }
          if (best.c >= THRESHOLD && best.who === who) b.right++;
        }
        st.extra += dets.length - used.size;
        for (const [j, d] of dets.entries()) {
          if (!used.has(j))
            extraHits.push(
              `${kind} ${mode}: ${file} ${v.name} ${String(v.scale)}, ${(d.box.x2 - d.box.x1).toFixed(0)} px at (${d.box.x1.toFixed(0)}, ${d.box.y1.toFixed(0)}), score ${d.score.toFixed(2)}`,
            );
        }
      }
    }
  }
}
const emptyHits = [];
for (const file of EMPTY) {
  const { out } = await variants(readFileSync(join(dir, file)));
  for (const v of out) {
    const image = await decodeImage(v.bytes, file);
    for (const [kind, modes] of Object.entries(detectors)) {
      for (const [mode, { det, minSide }] of Object.entries(modes)) {
        const dets = (await det.detect(image)).filter((d) => side(d.box) >= minSide);
        stats[`${kind} ${mode}`].empty += dets.length;
        for (const d of dets)
          emptyHits.push(
            `${kind} ${mode}: ${file} ${v.name} ${String(v.scale)}, ${(d.box.x2 - d.box.x1).toFixed(0)} px, score ${d.score.toFixed(2)}`,
          );
      }
    }
  }
}
const emptyImages = EMPTY.length * (SCALES.length * 5 + 2);

const f1 = (x) => (Number.isNaN(x) ? '-' : x.toFixed(2));
const ratio = (a, n) => (n === 0 ? '-' : `${String(a)}/${String(n)} (${String(Math.round((100 * a) / n))}%)`);
console.log('\nDetection recall by face size (box width in the variant, pixels), all variants together:\n');
console.log(`| face px | faces | ${Object.keys(stats).join(' | ')} |`);
console.log(
  `| --- | --- | ${Object.keys(stats)
    .map(() => '---')
    .join(' | ')} |`,
);
for (const [i, bin] of BINS.entries()) {
  const n = stats['retinaface before'].bins[i].n;
  console.log(
    `| ${binName(bin)} | ${String(n)} | ${Object.values(stats)
      .map((s) => ratio(s.bins[i].found, n))
      .join(' | ')} |`,
  );
}
console.log('\nDetection recall by variant:\n');
console.log(`| variant | ${Object.keys(stats).join(' | ')} |`);
console.log(
  `| --- | ${Object.keys(stats)
    .map(() => '---')
    .join(' | ')} |`,
);
for (const name of Object.keys(stats['retinaface before'].variants)) {
  console.log(
    `| ${name} | ${Object.values(stats)
      .map((s) => ratio(s.variants[name].found, s.variants[name].n))
      .join(' | ')} |`,
  );
}
console.log('\nOther detections and time:\n');
console.log(`| | ${Object.keys(stats).join(' | ')} |`);
console.log(
  `| --- | ${Object.keys(stats)
    .map(() => '---')
    .join(' | ')} |`,
);
console.log(
  `| detections matching no face, photos with faces | ${Object.values(stats)
    .map((s) => String(s.extra))
    .join(' | ')} |`,
);
console.log(
  `| faces on home.jpg and dogs.jpg (${String(emptyImages)} images) | ${Object.values(stats)
    .map((s) => String(s.empty))
    .join(' | ')} |`,
);
console.log(
  `| ms/image, median (p90) | ${Object.values(stats)
    .map((s) => `${f1(pct(s.ms, 0.5))} (${f1(pct(s.ms, 0.9))})`)
    .join(' | ')} |`,
);
console.log('\nRecognition of the found faces ("after"): best match the same person at cosine >= 0.4,');
console.log('and the cosine distance (1 - cosine) to the same face in the original photo:\n');
console.log(
  '| face px | RetinaFace right | distance p10/median/p90/max | BlazeFace right | distance p10/median/p90/max |',
);
console.log('| --- | --- | --- | --- | --- |');
for (const [i, bin] of BINS.entries()) {
  const r = stats['retinaface after'].bins[i];
  const b = stats['blazeface after'].bins[i];
  const d = (xs) => `${f1(pct(xs, 0.1))} / ${f1(pct(xs, 0.5))} / ${f1(pct(xs, 0.9))} / ${f1(pct(xs, 1))}`;
  console.log(
    `| ${binName(bin)} | ${ratio(r.right, r.found)} | ${d(r.same)} | ${ratio(b.right, b.found)} | ${d(b.same)} |`,
  );
}
console.log(
  `\nDifferent people, same comparisons: cosine max ${f1(other.reduce((m, c) => Math.max(m, c), -1))}, p99 ${f1(pct(other, 0.99))} (${String(other.length)} pairs); a distance above ${String(1 - THRESHOLD)} is not recognized.`,
);
console.log(`\nDetections matching no face:\n${extraHits.join('\n')}`);
console.log(`\nFaces on the photos without faces:\n${emptyHits.join('\n')}`);
console.log('onnxruntime CPU, 1 thread; RetinaFace input 640, BlazeFace 256.');
await recognizer.release();
