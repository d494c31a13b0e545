import type { Detection, Point } from './geometry.js';

/**
 * Face alignment: the similarity transform (rotation, uniform scale, translation) that best maps a
 * face's 5 landmarks onto the recognition model's reference points (least squares, Umeyama 1991),
 * then the aligned crop sampled from the image with bilinear interpolation.
 */

/** ArcFace's reference landmarks for a 112x112 crop (insightface `arcface_dst`). */
export const ARCFACE_112: readonly Point[] = [
  { x: 38.2946, y: 51.6963 },
  { x: 73.5318, y: 51.5014 },
  { x: 56.0252, y: 71.7366 },
  { x: 41.5493, y: 92.3655 },
  { x: 70.7299, y: 92.2041 },
];

/**
 * The transform that aligns a detected face to the 112x112 template, from the landmarks its
 * detector gives: five points map to the template's five; BlazeFace's eyes, nose and mouth centre
 * map to the template's eyes, nose and the midpoint of its mouth corners (ears are not used).
 */
export function alignmentTransform(detection: Detection): Similarity {
  const [e1, e2, nose, m1, m2] = ARCFACE_112 as [Point, Point, Point, Point, Point];
  if (detection.layout === 'five') return estimateSimilarity(detection.landmarks.slice(0, 5), ARCFACE_112);
  const mouth = { x: (m1.x + m2.x) / 2, y: (m1.y + m2.y) / 2 };
  return estimateSimilarity(detection.landmarks.slice(0, 4), [e1, e2, nose, mouth]);
}

/** x' = a*x - b*y + tx ; y' = b*x + a*y + ty */
export interface Similarity {
  readonly a: number;
  readonly b: number;
  readonly tx: number;
  readonly ty: number;
}

export function estimateSimilarity(src: readonly Point[], dst: readonly Point[]): Similarity {
  const n = src.length;
  if (n < 2 || n !== dst.length) throw new Error('estimateSimilarity needs two or more point pairs');
  let sx = 0;
  let sy = 0;
  let dx = 0;
  let dy = 0;
  for (let i = 0; i < n; i++) {
    sx += (src[i] as Point).x;
    sy += (src[i] as Point).y;
    dx += (dst[i] as Point).x;
    dy += (dst[i] as Point).y;
  }
  sx /= n;
  sy /= n;
  dx /= n;
  dy /= n;
  // For 2-D similarity, the least-squares solution in closed form.
  let num1 = 0;
  let num2 = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    const px = (src[i] as Point).x - sx;
    const py = (src[i] as Point).y - sy;
    const qx = (dst[i] as Point).x - dx;
    const qy = (dst[i] as Point).y - dy;
    num1 += px * qx + py * qy;
    num2 += px * qy - py * qx;
    den += px * px + py * py;
  }
  if (den === 0) throw new Error('landmarks are all at one point');
  const a = num1 / den;
  const b = num2 / den;
  return { a, b, tx: dx - (a * sx - b * sy), ty: dy - (b * sx + a * sy) };
}

export function applySimilarity(t: Similarity, p: Point): Point {
  return { x: t.a * p.x - t.b * p.y + t.tx, y: t.b * p.x + t.a * p.y + t.ty };
}

export function invertSimilarity(t: Similarity): Similarity {
  const d = t.a * t.a + t.b * t.b;
  const a = t.a / d;
  const b = -t.b / d;
  return { a, b, tx: -(a * t.tx - b * t.ty), ty: -(b * t.tx + a * t.ty) };
}

export interface RgbImage {
  readonly width: number;
  readonly height: number;
  /** Interleaved RGB, 3 bytes a pixel. */
  readonly data: Uint8Array;
}

/**
 * The `size` x `size` crop that `toCrop` maps the image into, sampled bilinearly (outside the
 * image: black, as cv2.warpAffine's default border).
 */
export function warpSimilarity(image: RgbImage, toCrop: Similarity, size: number): RgbImage {
  const inv = invertSimilarity(toCrop);
  const out = new Uint8Array(size * size * 3);
  const { width, height, data } = image;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const sx = inv.a * x - inv.b * y + inv.tx;
      const sy = inv.b * x + inv.a * y + inv.ty;
      const x0 = Math.floor(sx);
      const y0 = Math.floor(sy);
      const fx = sx - x0;
      const fy = sy - y0;
      const o = (y * size + x) * 3;
      for (let c = 0; c < 3; c++) {
        const p = (xx: number, yy: number): number =>
          xx < 0 || yy < 0 || xx >= width || yy >= height ? 0 : (data[(yy * width + xx) * 3 + c] as number);
        const v =
          p(x0, y0) * (1 - fx) * (1 - fy) +
          p(x0 + 1, y0) * fx * (1 - fy) +
          p(x0, y0 + 1) * (1 - fx) * fy +
          p(x0 + 1, y0 + 1) * fx * fy;
        out[o + c] = Math.round(v);
      }
    }
  }
  return { width: size, height: size, data: out };
}
