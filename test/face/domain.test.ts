import { describe, expect, it } from '@jest/globals';
import {
  ARCFACE_112,
  applySimilarity,
  estimateSimilarity,
  invertSimilarity,
  warpSimilarity,
} from '../../services/face/src/domain/align.js';
import {
  iou,
  locationOf,
  nonMaxSuppression,
  type Detection,
} from '../../services/face/src/domain/geometry.js';
import {
  confidenceOf,
  distanceOf,
  dot,
  l2Normalize,
  meanEmbedding,
} from '../../services/face/src/domain/similarity.js';

describe('similarity', () => {
  it('normalises, and maps cosine to confidence (clamped 0..1) and distance (1 - cosine)', () => {
    const a = l2Normalize(new Float32Array([3, 4]));
    expect(Array.from(a)).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(dot(a, a)).toBeCloseTo(1, 6);
    expect(confidenceOf(0.55)).toBe(0.55);
    expect(confidenceOf(-0.2)).toBe(0);
    expect(confidenceOf(1.0000001)).toBe(1);
    expect(distanceOf(0.55)).toBeCloseTo(0.45, 10);
    expect(distanceOf(-1)).toBe(2);
    expect(Array.from(l2Normalize(new Float32Array([0, 0])))).toEqual([0, 0]);
  });

  it('averages embeddings into one unit template', () => {
    const m = meanEmbedding([new Float32Array([1, 0]), new Float32Array([0, 1])]);
    expect(m[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(m[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(() => meanEmbedding([])).toThrow();
  });
});

describe('geometry', () => {
  const det = (x1: number, y1: number, x2: number, y2: number, score: number): Detection => ({
    box: { x1, y1, x2, y2 },
    score,
    landmarks: [],
    layout: 'five',
  });

  it('computes IoU and keeps the best of overlapping detections', () => {
    expect(iou({ x1: 0, y1: 0, x2: 10, y2: 10 }, { x1: 5, y1: 0, x2: 15, y2: 10 })).toBeCloseTo(50 / 150, 10);
    const kept = nonMaxSuppression(
      [det(0, 0, 10, 10, 0.8), det(1, 1, 11, 11, 0.9), det(50, 50, 60, 60, 0.7)],
      0.3,
    );
    expect(kept.map((d) => d.score)).toEqual([0.9, 0.7]);
  });

  it('reports integer locations clamped to the image', () => {
    expect(locationOf({ x1: -3.2, y1: 10.6, x2: 120.4, y2: 300 }, 100, 200)).toEqual({
      top: 11,
      right: 100,
      bottom: 200,
      left: 0,
    });
  });
});

describe('alignment', () => {
  it('recovers a known similarity transform from 5 points, and inverts it', () => {
    const truth = { a: 0.5 * Math.cos(0.3), b: 0.5 * Math.sin(0.3), tx: 12, ty: -7 };
    const src = [
      { x: 100, y: 120 },
      { x: 170, y: 118 },
      { x: 135, y: 160 },
      { x: 108, y: 200 },
      { x: 165, y: 198 },
    ];
    const dst = src.map((p) => applySimilarity(truth, p));
    const t = estimateSimilarity(src, dst);
    expect(t.a).toBeCloseTo(truth.a, 8);
    expect(t.b).toBeCloseTo(truth.b, 8);
    expect(t.tx).toBeCloseTo(truth.tx, 6);
    expect(t.ty).toBeCloseTo(truth.ty, 6);
    const back = applySimilarity(invertSimilarity(t), dst[2]!);
    expect(back.x).toBeCloseTo(src[2]!.x, 6);
    expect(back.y).toBeCloseTo(src[2]!.y, 6);
  });

  it('warps the landmarks of a face onto the ArcFace template positions', () => {
    // An image whose pixel (x, y) has red = x and green = y (mod 256): sampling tells where it came from.
    const width = 200;
    const height = 200;
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) {
        data[(y * width + x) * 3] = x;
        data[(y * width + x) * 3 + 1] = y;
      }
    // Landmarks: the template scaled 1.5x and moved by (20, 30).
    const src = ARCFACE_112.map((p) => ({ x: p.x * 1.5 + 20, y: p.y * 1.5 + 30 }));
    const crop = warpSimilarity({ width, height, data }, estimateSimilarity(src, ARCFACE_112), 112);
    expect(crop.width).toBe(112);
    const at = (x: number, y: number) => [crop.data[(y * 112 + x) * 3], crop.data[(y * 112 + x) * 3 + 1]];
    // Crop pixel (56, 72) comes from image (56*1.5+20, 72*1.5+30) = (104, 138).
    expect(at(56, 72)).toEqual([104, 138]);
    expect(at(0, 0)).toEqual([20, 30]);
  });
});

describe('FaceTracker', () => {
  it('follows an overlapping face across frames and gaps, and keeps one identity per track', async () => {
    const { FaceTracker } = await import('../../services/face/src/domain/tracker.js');
    const tracker = new FaceTracker({ minIou: 0.3, maxGapFrames: 2 });
    const at = (x: number) => ({ x1: x, y1: 0, x2: x + 100, y2: 100 });
    const seen = (x: number, recognized: boolean, confidence: number) => ({
      box: at(x),
      recognized,
      personName: recognized ? 'Lan' : 'Unknown',
      confidence,
    });
    const a = tracker.update(0, [seen(0, false, 0.2), seen(500, false, 0.1)]);
    const b = tracker.update(1, [seen(10, true, 0.6)]);
    const c = tracker.update(3, [seen(20, true, 0.8)]); // a gap of one frame
    const d = tracker.update(9, [seen(25, true, 0.7)]); // gone too long: a new track
    expect(b[0]!.id).toBe(a[0]!.id);
    expect(c[0]!.id).toBe(a[0]!.id);
    expect(d[0]!.id).not.toBe(a[0]!.id);
    expect(tracker.all()[0]).toMatchObject({
      frames: 3,
      person: { name: 'Lan', confidence: 0.8, firstFrame: 1 },
    });
    expect(tracker.all()).toHaveLength(3);
  });
});
