/**
 * Small-angle skew of a text page by projection profiles: the page is binarised (Otsu), and for
 * each candidate angle the ink pixels are projected onto the axis perpendicular to lines tilted by
 * that angle; when the angle matches the text's, rows of text fall into few bins and the sum of
 * squared bin counts peaks. A coarse search over ±maxDegrees, then a fine one around the best.
 */

export interface GrayImage {
  readonly width: number;
  readonly height: number;
  /** One byte per pixel, row-major. */
  readonly data: Uint8Array;
}

export interface SkewEstimate {
  /** Degrees the text lines are turned clockwise (y down); rotate by -degrees to straighten. */
  readonly degrees: number;
  /** Profile score at the best angle over the score at 0 (1 when the page is straight). */
  readonly strength: number;
  /** Ink pixels the estimate rests on. */
  readonly inkPixels: number;
}

export interface SkewOptions {
  readonly maxDegrees: number;
  readonly coarseStep: number;
  readonly fineStep: number;
  /** Ink pixels used at most (an even sample of them beyond). */
  readonly maxInk: number;
}

export const DEFAULT_SKEW_OPTIONS: SkewOptions = {
  maxDegrees: 15,
  coarseStep: 0.5,
  fineStep: 0.05,
  maxInk: 50_000,
};

/** Otsu's threshold over a grey histogram. */
export function otsuThreshold(image: GrayImage): number {
  const hist = new Float64Array(256);
  for (const v of image.data) hist[v] = (hist[v] ?? 0) + 1;
  const total = image.data.length;
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * (hist[i] ?? 0);
  let sumB = 0;
  let wB = 0;
  let best = 0;
  let threshold = 127;
  for (let t = 0; t < 256; t++) {
    wB += hist[t] ?? 0;
    if (wB === 0) continue;
    const wF = total - wB;
    if (wF === 0) break;
    sumB += t * (hist[t] ?? 0);
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) ** 2;
    if (between > best) {
      best = between;
      threshold = t;
    }
  }
  return threshold;
}

/** Coordinates (centred on the page) of the ink pixels: the minority class of Otsu's split. */
export function inkPixels(image: GrayImage, maxInk: number): { xs: Float64Array; ys: Float64Array } {
  const t = otsuThreshold(image);
  let dark = 0;
  for (const v of image.data) if (v <= t) dark++;
  // Dark text on a light page is the usual case; light text on dark is inverted.
  const inkIsDark = dark <= image.data.length / 2;
  const count = inkIsDark ? dark : image.data.length - dark;
  const stride = Math.max(1, Math.ceil(count / maxInk));
  const n = Math.floor(count / stride) + 1;
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  const cx = image.width / 2;
  const cy = image.height / 2;
  let seen = 0;
  let k = 0;
  for (let y = 0; y < image.height; y++) {
    const row = y * image.width;
    for (let x = 0; x < image.width; x++) {
      const v = image.data[row + x] ?? 255;
      if (v <= t !== inkIsDark) continue;
      if (seen++ % stride !== 0 || k >= n) continue;
      xs[k] = x + 0.5 - cx;
      ys[k] = y + 0.5 - cy;
      k++;
    }
  }
  return { xs: xs.subarray(0, k), ys: ys.subarray(0, k) };
}

function profileScore(xs: Float64Array, ys: Float64Array, degrees: number, bins: Float64Array): number {
  bins.fill(0);
  const a = (degrees * Math.PI) / 180;
  const sin = Math.sin(a);
  const cos = Math.cos(a);
  const offset = bins.length / 2;
  for (let i = 0; i < xs.length; i++) {
    // The pixel's row once the page is turned back by `degrees`.
    const b = Math.floor(-(xs[i] as number) * sin + (ys[i] as number) * cos + offset);
    if (b >= 0 && b < bins.length) bins[b] = (bins[b] as number) + 1;
  }
  let score = 0;
  for (const c of bins) score += c * c;
  return score;
}

export function estimateSkew(image: GrayImage, options: SkewOptions = DEFAULT_SKEW_OPTIONS): SkewEstimate {
  const { xs, ys } = inkPixels(image, options.maxInk);
  if (xs.length < 50) return { degrees: 0, strength: 1, inkPixels: xs.length };
  const bins = new Float64Array(Math.ceil(Math.hypot(image.width, image.height)) + 2);
  const base = profileScore(xs, ys, 0, bins);
  let best = 0;
  let bestScore = base;
  const search = (from: number, to: number, step: number): void => {
    for (let d = from; d <= to + 1e-9; d += step) {
      const score = profileScore(xs, ys, d, bins);
      if (score > bestScore) {
        bestScore = score;
        best = d;
      }
    }
  };
  search(-options.maxDegrees, options.maxDegrees, options.coarseStep);
  search(best - options.coarseStep, best + options.coarseStep, options.fineStep);
  return {
    degrees: Math.round(best * 100) / 100,
    strength: base === 0 ? 1 : Math.round((bestScore / base) * 1000) / 1000,
    inkPixels: xs.length,
  };
}
