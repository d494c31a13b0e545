import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';
import { z } from 'zod';
import {
  DEFAULT_SCAN_MIN_SIZE,
  DEFAULT_MIN_SCORE,
  DETECTOR_KINDS,
  DETECTOR_MODEL_IDS,
} from './adapters/detector.js';

/**
 * The face service's configuration: the kit's variables (the spec's limits as defaults: 3 requests
 * at once, 50 MB an image) and the pipeline's. Parsed once, at start-up.
 */

export const faceConfigSchema = kitConfigSchema({
  port: 8003,
  maxConcurrency: 3,
  queueSize: 64,
  queueTimeoutMs: 60_000,
  requestTimeoutMs: 300_000,
  // Multipart bodies are limited per file (below); this bounds JSON bodies only.
  bodyLimit: '1mb',
  // ffmpeg decoding a video for as long as a request may last.
  childCpuSeconds: 300,
}).extend({
  /** The token that callers present (scope `face`); AUTH_TOKENS_FILE may add more. */
  FACE_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** The detector family: `retinaface` (5 landmarks) or `blazeface` (MediaPipe, 6 keypoints). */
  FACE_DETECTOR: z.enum(DETECTOR_KINDS).default('retinaface'),
  /**
   * The detector ONNX, of the FACE_DETECTOR family; default: that family's manifest model under
   * MODELS_DIR (`face-detector-retinaface` or `face-detector`).
   */
  FACE_DETECTOR_PATH: z.string().optional(),
  /** RetinaFace: the image's longer side as the network sees it (BlazeFace's input is fixed). */
  FACE_DETECTOR_INPUT_SIZE: env.int({ min: 64, max: 4096 }).default(640),
  /** The recognizer ONNX (ArcFace family, 112x112 input); default: MODEL_PATH, else the manifest's `face-recognizer`. */
  FACE_RECOGNIZER_PATH: z.string().optional(),
  /** Pixel order and normalisation the recognizer was trained with: (x - mean) / std. */
  FACE_RECOGNIZER_CHANNELS: z.enum(['rgb', 'bgr']).default('rgb'),
  FACE_RECOGNIZER_MEAN: env.number({ min: 0, max: 255 }).default(127.5),
  FACE_RECOGNIZER_STD: env.number({ min: 0.001, max: 1000 }).default(128),
  /** `auto`: CUDA when onnxruntime's CUDA provider loads, else CPU; `cpu`; `cuda` (fail without it). */
  FACE_DEVICE: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  /** onnxruntime intra-op threads per model; default: the cores this process may use, at most 4. */
  FACE_THREADS: env.int({ min: 1, max: 64 }).optional(),
  /**
   * Detector score (0..1) below which a face is not reported; default per family: 0.8 for
   * RetinaFace (its softmax scores reach 0.6-0.8 on non-faces), 0.6 for BlazeFace.
   */
  FACE_MIN_DETECTION_SCORE: env.number({ min: 0.05, max: 0.99 }).optional(),
  /**
   * The smallest face (pixels) detection is laid out for: images too large to show such a face to
   * the detector at its input size are also scanned in tiles (services/face/README.md); 0: never.
   */
  FACE_SCAN_MIN_SIZE: env.int({ min: 0, max: 4096 }).default(DEFAULT_SCAN_MIN_SIZE),
  /** Faces whose box is smaller (shorter side, pixels) are not reported nor recognized. */
  FACE_MIN_SIZE: env.int({ min: 8, max: 4096 }).default(12),
  /** Largest image file (bytes or 50mb style). */
  MAX_IMAGE_BYTES: env.bytes().default(50 * 1024 * 1024),
  /** Largest image in pixels (decompression bombs are refused before decoding). */
  MAX_IMAGE_PIXELS: env.int({ min: 1, max: 1_000_000_000 }).default(50_000_000),
  /** Images per /register_batch call (the spec's 10). */
  MAX_REGISTER_BATCH: env.int({ min: 1, max: 100 }).default(10),
  /** Images per /recognize_batch call. */
  MAX_RECOGNIZE_BATCH: env.int({ min: 1, max: 200 }).default(20),
  /** ffmpeg and ffprobe for /recognize_video; without them the endpoint says video is unavailable. */
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe'),
  /** Largest video file. */
  MAX_VIDEO_BYTES: env.bytes().default(200 * 1024 * 1024),
  /** Longest video, in seconds. */
  MAX_VIDEO_SECONDS: env.number({ min: 1, max: 86_400 }).default(600),
  /** Largest video frame, width times height, from the header before decoding (default 4096x2160). */
  MAX_VIDEO_PIXELS: env.int({ min: 1, max: 1_000_000_000 }).default(4096 * 2160),
  /** Most frames a video may hold, from the header before decoding (default 10 minutes at 60 fps). */
  MAX_VIDEO_FRAMES: env.int({ min: 1, max: 100_000_000 }).default(36_000),
  /** Frames are decoded at most this wide (height in proportion). */
  VIDEO_MAX_WIDTH: env.int({ min: 64, max: 7680 }).default(1280),
  /**
   * PostgreSQL for several replicas (postgres://user:pass@host/db); without it the registry is the
   * SQLite file below (one replica).
   */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
    .optional(),
  /**
   * With DATABASE_URL: how often the whole registry is read again, so a change notification that
   * never arrived is corrected within this time; 0 never.
   */
  REGISTRY_RELOAD_MS: env.ms().default(300_000),
  /**
   * With DATABASE_URL: how often the connection listening for other replicas' changes is checked;
   * unanswered within this time it counts as dead (a silent disconnect) and is reconnected.
   */
  REGISTRY_LISTEN_CHECK_MS: env.ms({ min: 100 }).default(15_000),
  /** With DATABASE_URL: the longest a registry query or a connection attempt may take. */
  REGISTRY_QUERY_TIMEOUT_MS: env.ms({ min: 100 }).default(30_000),
  /** The SQLite registry file; default `$DATA_DIR/face-registry.sqlite` (DATA_DIR default ./data). */
  REGISTRY_PATH: z.string().optional(),
  /** How often a missing model file is looked for again. */
  MODEL_POLL_MS: env.ms({ min: 10 }).default(2000),
});

export type FaceConfig = z.output<typeof faceConfigSchema> & {
  readonly detectorPath: string;
  /** FACE_MIN_DETECTION_SCORE, or the detector family's default. */
  readonly minDetectionScore: number;
  readonly recognizerPath: string;
  readonly registryPath: string;
  readonly threads: number;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadFaceConfig(source: Env = process.env): FaceConfig {
  const config = loadConfig(faceConfigSchema, source);
  const modelsDir = config.MODELS_DIR ?? defaultModelsDir(source);
  const manifestPath = (id: string): string => {
    const entry = MODEL_MANIFEST[id];
    if (entry === undefined) throw new Error(`the model manifest lacks "${id}"`);
    return resolveModelPath(modelsDir, entry);
  };
  return {
    ...config,
    detectorPath: config.FACE_DETECTOR_PATH ?? manifestPath(DETECTOR_MODEL_IDS[config.FACE_DETECTOR]),
    minDetectionScore: config.FACE_MIN_DETECTION_SCORE ?? DEFAULT_MIN_SCORE[config.FACE_DETECTOR],
    // MODEL_PATH: what the operator and the runner set from the suite's `model` (the recognizer).
    recognizerPath: config.FACE_RECOGNIZER_PATH ?? config.MODEL_PATH ?? manifestPath('face-recognizer'),
    registryPath: config.REGISTRY_PATH ?? join(config.DATA_DIR ?? 'data', 'face-registry.sqlite'),
    threads: config.FACE_THREADS ?? Math.min(4, availableParallelism()),
  };
}
