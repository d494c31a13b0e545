import type ort from 'onnxruntime-node';
import type { RgbImage } from '../domain/align.js';
import type { Detection } from '../domain/geometry.js';
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

export interface DetectorOptions {
  readonly kind: DetectorKind;
  /** Score (0..1) below which a face is not reported. */
  readonly minScore: number;
  /** RetinaFace: the image's longer side as the network sees it (BlazeFace's input size is fixed). */
  readonly inputSize: number;
}

export interface FaceDetector {
  readonly kind: DetectorKind;
  /** Faces in pixels of `image`, best first. */
  detect(image: RgbImage): Promise<Detection[]>;
}

/** The detector of `options.kind` over a loaded session; throws when the model is not of that family. */
export function faceDetector(session: ort.InferenceSession, options: DetectorOptions): FaceDetector {
  const nmsIou = NMS_IOU[options.kind];
  if (options.kind === 'retinaface') {
    const layout = retinaFaceLayout(session);
    const opts = { minScore: options.minScore, nmsIou, inputSize: options.inputSize };
    return { kind: 'retinaface', detect: (image) => detectRetinaFace(session, layout, image, opts) };
  }
  const layout = blazeFaceLayout(session);
  const opts = { minScore: options.minScore, nmsIou };
  return { kind: 'blazeface', detect: (image) => detectBlazeFace(session, layout, image, opts) };
}
