import type ort from 'onnxruntime-node';
import type { RgbImage } from '../domain/align.js';
import { type Detection, nonMaxSuppression, type Point } from '../domain/geometry.js';
import type { DetectOptions } from './blazeface.js';
import { resizeRgb } from './image.js';
import { floatOutput, tensor } from './onnx.js';

/**
 * RetinaFace of the biubug6/Pytorch_Retinaface family (MobileNet-0.25 or ResNet-50 backbone) as
 * ONNX, exported with dynamic height and width: input `input` NCHW float32, BGR with the per-channel
 * means 104, 117, 123 subtracted (no scaling), as the network was trained; outputs `loc` (N,A,4),
 * `conf` (N,A,2, softmax applied: background, face) and `landmarks` (N,A,10).
 *
 * Anchors ("priors"): three levels of stride 8, 16 and 32 with square anchors of 16 and 32, 64 and
 * 128, 256 and 512 pixels, for each cell row by row, both sizes of a cell in turn. Decoding uses the
 * variances 0.1 (centre) and 0.2 (size): centre = anchor centre + 0.1 * d * anchor size, size =
 * anchor size * exp(0.2 * d); the 5 landmarks (left eye, right eye, nose tip, left and right mouth
 * corners, as seen in the image) are offsets like the centre. Overlaps are removed by greedy NMS.
 *
 * The image is scaled (aspect kept) so its longer side is `inputSize`, then padded at the right and
 * bottom to multiples of 32 (the coarsest stride) with the mean colour, i.e. zeros after subtraction.
 */

export const RETINAFACE_MEAN_BGR = [104, 117, 123] as const;
const LEVELS = [
  { stride: 8, sizes: [16, 32] },
  { stride: 16, sizes: [64, 128] },
  { stride: 32, sizes: [256, 512] },
] as const;
const VARIANCE_CENTRE = 0.1;
const VARIANCE_SIZE = 0.2;
/** Candidates kept (best first) before NMS, as biubug6's evaluation does. */
const TOP_K = 5000;

export interface RetinaFaceLayout {
  readonly input: string;
  readonly loc: string;
  readonly conf: string;
  readonly landmarks: string;
}

export function retinaFaceLayout(session: ort.InferenceSession): RetinaFaceLayout {
  const input = session.inputNames[0];
  const has = (name: string): boolean => session.outputNames.includes(name);
  if (input === undefined || !has('loc') || !has('conf') || !has('landmarks')) {
    throw new Error(
      `not a RetinaFace model (outputs loc, conf and landmarks expected): inputs ${session.inputNames.join(', ')}, ` +
        `outputs ${session.outputNames.join(', ')}`,
    );
  }
  const meta = session.inputMetadata[0];
  const shape = meta !== undefined && 'shape' in meta ? meta.shape : [];
  if (shape.length !== 4 || (typeof shape[1] === 'number' && shape[1] !== 3)) {
    throw new Error(`the RetinaFace input should be N x 3 x H x W, not [${shape.join(', ')}]`);
  }
  return { input, loc: 'loc', conf: 'conf', landmarks: 'landmarks' };
}

export interface RetinaFaceOptions extends DetectOptions {
  /** The longer side of the image as the network sees it (pixels). */
  readonly inputSize: number;
}

/** Anchors for a `width` x `height` input: centre x, centre y, size (pixels), 3 numbers each. */
export function retinaFacePriors(width: number, height: number): Float32Array {
  let count = 0;
  for (const l of LEVELS)
    count += Math.ceil(width / l.stride) * Math.ceil(height / l.stride) * l.sizes.length;
  const priors = new Float32Array(count * 3);
  let k = 0;
  for (const { stride, sizes } of LEVELS) {
    const cols = Math.ceil(width / stride);
    const rows = Math.ceil(height / stride);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        for (const size of sizes) {
          priors[k++] = (c + 0.5) * stride;
          priors[k++] = (r + 0.5) * stride;
          priors[k++] = size;
        }
      }
    }
  }
  return priors;
}

export async function detectRetinaFace(
  session: ort.InferenceSession,
  layout: RetinaFaceLayout,
  image: RgbImage,
  options: RetinaFaceOptions,
): Promise<Detection[]> {
  const scale = options.inputSize / Math.max(image.width, image.height);
  const w = Math.max(1, Math.round(image.width * scale));
  const h = Math.max(1, Math.round(image.height * scale));
  const W = Math.ceil(w / 32) * 32;
  const H = Math.ceil(h / 32) * 32;
  const { data, scaleX, scaleY } = await resizeRgb(image, w, h, false);
  const plane = W * H;
  const x = new Float32Array(3 * plane);
  for (let yy = 0; yy < h; yy++) {
    for (let xx = 0; xx < w; xx++) {
      const s = (yy * w + xx) * 3;
      const d = yy * W + xx;
      // RGB in, BGR planes out.
      x[d] = (data[s + 2] as number) - RETINAFACE_MEAN_BGR[0];
      x[plane + d] = (data[s + 1] as number) - RETINAFACE_MEAN_BGR[1];
      x[2 * plane + d] = (data[s] as number) - RETINAFACE_MEAN_BGR[2];
    }
  }
  const outputs = await session.run({ [layout.input]: tensor(x, [1, 3, H, W]) });
  const loc = floatOutput(outputs, layout.loc);
  const conf = floatOutput(outputs, layout.conf);
  const marks = floatOutput(outputs, layout.landmarks);
  const priors = retinaFacePriors(W, H);
  const anchors = priors.length / 3;
  if (loc.length !== anchors * 4 || conf.length !== anchors * 2 || marks.length !== anchors * 10) {
    throw new Error(
      `the detector gave ${String(conf.length / 2)} anchors for a ${String(W)}x${String(H)} input, ` +
        `${String(anchors)} expected: not a RetinaFace with strides 8, 16, 32 and two anchors a cell`,
    );
  }
  const candidates: number[] = [];
  for (let k = 0; k < anchors; k++) if ((conf[k * 2 + 1] as number) >= options.minScore) candidates.push(k);
  candidates.sort((a, b) => (conf[b * 2 + 1] as number) - (conf[a * 2 + 1] as number));
  const toImage = (px: number, py: number): Point => ({ x: px * scaleX, y: py * scaleY });
  const found: Detection[] = candidates.slice(0, TOP_K).map((k) => {
    const px = priors[k * 3] as number;
    const py = priors[k * 3 + 1] as number;
    const ps = priors[k * 3 + 2] as number;
    const cx = px + (loc[k * 4] as number) * VARIANCE_CENTRE * ps;
    const cy = py + (loc[k * 4 + 1] as number) * VARIANCE_CENTRE * ps;
    const bw = ps * Math.exp((loc[k * 4 + 2] as number) * VARIANCE_SIZE);
    const bh = ps * Math.exp((loc[k * 4 + 3] as number) * VARIANCE_SIZE);
    const p1 = toImage(cx - bw / 2, cy - bh / 2);
    const p2 = toImage(cx + bw / 2, cy + bh / 2);
    const landmarks: Point[] = [];
    for (let j = 0; j < 5; j++) {
      landmarks.push(
        toImage(
          px + (marks[k * 10 + 2 * j] as number) * VARIANCE_CENTRE * ps,
          py + (marks[k * 10 + 2 * j + 1] as number) * VARIANCE_CENTRE * ps,
        ),
      );
    }
    return {
      box: { x1: p1.x, y1: p1.y, x2: p2.x, y2: p2.y },
      score: conf[k * 2 + 1] as number,
      landmarks,
      layout: 'five',
    };
  });
  return nonMaxSuppression(found, options.nmsIou);
}
