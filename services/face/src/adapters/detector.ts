import type ort from 'onnxruntime-node';
import type { RgbImage } from '../domain/align.js';
import { type Detection, nonMaxSuppression, weightedNonMaxSuppression } from '../domain/geometry.js';
import { cropRgb, fromTile, scanPlan } from '../domain/tiling.js';
import { blazeFaceLayout, detectBlazeFace } from './blazeface.js';
import { detectRetinaFace, retinaFaceLayout } from './retinaface.js';

/**
 * The face detectors the service can run, behind one interface: the family is chosen by config
 * (FACE_DETECTOR), and each family checks at load that the ONNX file is one of its own.
 */

export const DETECTOR_KINDS = ['blazeface', 'retinaface'] as const;
export type DetectorKind = (typeof DETECTOR_KINDS)[number];

/** The manifest entry each family's default model is fetched as. */
export const DETECTOR_MODEL_IDS: Readonly<Record<DetectorKind, string>> = {
  blazeface: 'face-detector',
  retinaface: 'face-detector-retinaface',
};

/**
 * Default score thresholds, measured on the test photos (test/bench/face/detectors.js): RetinaFace
 * finds every annotated face at 0.8 with no false detection (at 0.6 it took a dog for a face).
 */
export const DEFAULT_MIN_SCORE: Readonly<Record<DetectorKind, number>> = { blazeface: 0.6, retinaface: 0.8 };

/** IoU above which overlapping boxes are one face: MediaPipe's (weighted) and biubug6's (greedy). */
const NMS_IOU: Readonly<Record<DetectorKind, number>> = { blazeface: 0.3, retinaface: 0.4 };

/**
 * The smallest face (box width in the detector's input pixels) each family finds reliably on the
 * test photos (services/face/README.md, "Small faces"): both lose faces under about 16, so tiles
 * are laid out for 20.
 */
export const MIN_INPUT_FACE: Readonly<Record<DetectorKind, number>> = { blazeface: 20, retinaface: 20 };

/**
 * Score a face found in a tile, or under SMALL_FACE pixels, needs: BlazeFace scores fur in tiles
 * up to 0.80 (dogs.jpg in a larger frame) and 23 px of a garden 0.64 (home.jpg), its faces of
 * 16 px and more 0.85 and above (services/face/README.md, "Small faces").
 */
const SMALL_MIN_SCORE: Readonly<Record<DetectorKind, number>> = { blazeface: 0.85, retinaface: 0 };
/** Faces under this many pixels (box side) are "small" above. */
const SMALL_FACE = 24;

/** The smallest face (image pixels) the detection is laid out for by default (FACE_SCAN_MIN_SIZE). */
export const DEFAULT_SCAN_MIN_SIZE = 16;

export interface DetectorOptions {
  readonly kind: DetectorKind;
  /** Score (0..1) below which a face is not reported. */
  readonly minScore: number;
  /** RetinaFace: the image's longer side as the network sees it (BlazeFace's input size is fixed). */
  readonly inputSize: number;
  /**
   * The smallest face (image pixels) to find: images too large for it at the input size are also
   * scanned in tiles (default DEFAULT_SCAN_MIN_SIZE; 0: the whole image only).
   */
  readonly scanMinSize?: number;
}

export interface FaceDetector {
  readonly kind: DetectorKind;
  /** Faces in pixels of `image`, best first. */
  detect(image: RgbImage): Promise<Detection[]>;
}

/** The detector of `options.kind` over a loaded session; throws when the model is not of that family. */
export function faceDetector(session: ort.InferenceSession, options: DetectorOptions): FaceDetector {
  const nmsIou = NMS_IOU[options.kind];
  const scan = {
    minInputFace: MIN_INPUT_FACE[options.kind],
    smallMinScore: Math.max(options.minScore, SMALL_MIN_SCORE[options.kind]),
    minFace: options.scanMinSize ?? DEFAULT_SCAN_MIN_SIZE,
  };
  if (options.kind === 'retinaface') {
    const layout = retinaFaceLayout(session);
    const opts = { minScore: options.minScore, nmsIou, inputSize: options.inputSize };
    const once = (image: RgbImage): Promise<Detection[]> => detectRetinaFace(session, layout, image, opts);
    const merge = (all: Detection[]): Detection[] => nonMaxSuppression(all, nmsIou);
    return {
      kind: 'retinaface',
      detect: (image) => scanImage(image, once, merge, { ...scan, inputSize: opts.inputSize }),
    };
  }
  const layout = blazeFaceLayout(session);
  const opts = { minScore: options.minScore, nmsIou };
  const once = (image: RgbImage): Promise<Detection[]> => detectBlazeFace(session, layout, image, opts);
  const merge = (all: Detection[]): Detection[] => weightedNonMaxSuppression(all, nmsIou);
  return {
    kind: 'blazeface',
    detect: (image) => scanImage(image, once, merge, { ...scan, inputSize: layout.size }),
  };
}

/**
 * The whole image at the detector's input size (scaled up or down), and, when faces of `minFace`
 * would be too small there, the tiles of domain/tiling.ts; overlaps merged by the family's NMS.
 */
async function scanImage(
  image: RgbImage,
  once: (image: RgbImage) => Promise<Detection[]>,
  merge: (all: Detection[]) => Detection[],
  options: { inputSize: number; minInputFace: number; minFace: number; smallMinScore: number },
): Promise<Detection[]> {
  const sure = (d: Detection): boolean => d.score >= options.smallMinScore;
  const small = (d: Detection): boolean => Math.min(d.box.x2 - d.box.x1, d.box.y2 - d.box.y1) < SMALL_FACE;
  const whole = (await once(image)).filter((d) => !small(d) || sure(d));
  const tiles = scanPlan(image.width, image.height, options);
  if (tiles.length === 0) return whole;
  const all = [...whole];
  for (const tile of tiles)
    all.push(...fromTile((await once(cropRgb(image, tile))).filter(sure), tile, image));
  return merge(all).sort((a, b) => b.score - a.score);
}
