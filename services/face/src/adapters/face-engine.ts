import { performance } from 'node:perf_hooks';
import { basename } from 'node:path';
import type ort from 'onnxruntime-node';
import { alignmentTransform, warpSimilarity, type RgbImage } from '../domain/align.js';
import type { Detection } from '../domain/geometry.js';
import { type DetectorOptions, type FaceDetector, faceDetector } from './detector.js';
import { loadSession, type ExecutionDevice } from './onnx.js';
import { embedFace, recognizerInfo, type RecognizerInfo, type RecognizerOptions } from './recognizer.js';

/** Detection, alignment and embedding of every face of an image, with per-stage timings. */

export interface FaceEngineOptions {
  readonly detectorPath: string;
  readonly recognizerPath: string;
  readonly device: ExecutionDevice;
  readonly threads: number;
  readonly detector: DetectorOptions;
  /** Faces smaller than this (box side, pixels) are not embedded. */
  readonly minFaceSize: number;
  readonly recognizer: RecognizerOptions;
}

export interface AnalyzedFace {
  readonly detection: Detection;
  readonly embedding: Float32Array;
}

export interface StageTimings {
  readonly detectMs: number;
  readonly alignMs: number;
  readonly embedMs: number;
}

export interface FaceEngine {
  /** `cpu` or `cuda:<id>`. */
  readonly device: string;
  /** The detector family in use. */
  readonly detector: FaceDetector['kind'];
  /** Identifies the recognizer (file name and dimension): embeddings of another never match. */
  readonly modelId: string;
  readonly dim: number;
  detect(image: RgbImage): Promise<Detection[]>;
  analyze(image: RgbImage, signal?: AbortSignal): Promise<{ faces: AnalyzedFace[]; timings: StageTimings }>;
  dispose(): Promise<void>;
}

export async function loadFaceEngine(options: FaceEngineOptions): Promise<FaceEngine> {
  const sessionOptions = { device: options.device, threads: options.threads };
  const detector = await loadSession(options.detectorPath, sessionOptions);
  let recognizer: Awaited<ReturnType<typeof loadSession>>;
  try {
    recognizer = await loadSession(options.recognizerPath, sessionOptions);
  } catch (error) {
    await detector.session.release();
    throw error;
  }
  try {
    const detect = faceDetector(detector.session, options.detector);
    const info = recognizerInfo(recognizer.session);
    return new OnnxFaceEngine(options, detector.session, detect, recognizer.session, info, recognizer.device);
  } catch (error) {
    await detector.session.release();
    await recognizer.session.release();
    throw error;
  }
}

class OnnxFaceEngine implements FaceEngine {
  readonly modelId: string;
  readonly dim: number;
  readonly detector: FaceDetector['kind'];

  constructor(
    private readonly options: FaceEngineOptions,
    private readonly detectorSession: ort.InferenceSession,
    private readonly faceDetector: FaceDetector,
    private readonly recognizer: ort.InferenceSession,
    private readonly info: RecognizerInfo,
    readonly device: string,
  ) {
    this.dim = info.dim;
    this.detector = faceDetector.kind;
    this.modelId = `${basename(options.recognizerPath)}:${String(info.dim)}`;
  }

  detect(image: RgbImage): Promise<Detection[]> {
    return this.faceDetector.detect(image);
  }

  async analyze(
    image: RgbImage,
    signal?: AbortSignal,
  ): Promise<{ faces: AnalyzedFace[]; timings: StageTimings }> {
    const t0 = performance.now();
    const detections = (await this.detect(image)).filter(
      (d) => Math.min(d.box.x2 - d.box.x1, d.box.y2 - d.box.y1) >= this.options.minFaceSize,
    );
    const t1 = performance.now();
    let alignMs = 0;
    let embedMs = 0;
    const faces: AnalyzedFace[] = [];
    for (const detection of detections) {
      signal?.throwIfAborted();
      const a0 = performance.now();
      const crop = warpSimilarity(image, alignmentTransform(detection), this.info.size);
      const a1 = performance.now();
      const embedding = await embedFace(this.recognizer, this.info, crop, this.options.recognizer);
      embedMs += performance.now() - a1;
      alignMs += a1 - a0;
      faces.push({ detection, embedding });
    }
    return { faces, timings: { detectMs: t1 - t0, alignMs, embedMs } };
  }

  async dispose(): Promise<void> {
    await this.detectorSession.release();
    await this.recognizer.release();
  }
}
