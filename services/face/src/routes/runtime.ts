import { performance } from 'node:perf_hooks';
import {
  BadRequestError,
  multipart,
  uploadedFiles,
  type ConcurrencyGate,
  type ModelHost,
  type Readiness,
  type UploadedFile,
} from '@clinicalsuite/kit';
import type { Request, RequestHandler } from 'express';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { AnalyzedFace } from '../adapters/face-engine.js';
import type { FaceModels } from '../adapters/face-models.js';
import { decodeImage, type DecodedImage } from '../adapters/image.js';
import type { Registry } from '../adapters/registry.js';
import type { FaceConfig } from '../config.js';
import type { RegistryMirror } from '../domain/registry-mirror.js';
import type { FaceMetrics } from '../metrics.js';

/** What the routes share: the loaded models and the registry in memory, and the pipeline on them. */

export interface FaceRuntime {
  readonly config: FaceConfig;
  readonly host: ModelHost<FaceModels>;
  readonly registry: Registry;
  /** The registry in memory: changes go through it, so they apply in order (and during loading). */
  readonly mirror: RegistryMirror;
  /** Whether this replica hears the other replicas' registry changes. */
  readonly feed: { readonly up: boolean };
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly gpu: GpuStatusReader;
  readonly metrics: FaceMetrics;
  readonly stats: ProcessingStats;
  readonly startedAt: number;
  readonly version: string;
}

/** Mean processing time of the requests that analysed images (for /status). */
export class ProcessingStats {
  private count = 0;
  private totalMs = 0;

  record(ms: number): void {
    this.count++;
    this.totalMs += ms;
  }

  get averageMs(): number {
    return this.count === 0 ? 0 : Math.round((this.totalMs / this.count) * 100) / 100;
  }
}

export interface AnalyzedImage {
  readonly image: DecodedImage;
  readonly faces: AnalyzedFace[];
}

/**
 * Decodes one uploaded image (400 when empty, not an image, or over the pixel limit): needs no
 * model, so a route checks its upload before it asks whether the service is ready.
 */
export async function decodeUpload(rt: FaceRuntime, file: UploadedFile): Promise<DecodedImage> {
  if (file.buffer === undefined || file.size === 0) {
    throw new BadRequestError(`${file.originalname || file.fieldname} is empty`, { code: 'empty_file' });
  }
  const t0 = performance.now();
  const image = await decodeImage(file.buffer, file.originalname || file.fieldname, {
    maxPixels: rt.config.MAX_IMAGE_PIXELS,
  });
  rt.metrics.stage.observe({ stage: 'decode' }, (performance.now() - t0) / 1000);
  return image;
}

/** Detect, align and embed the faces of a decoded image, timing each stage into the metrics. */
export async function analyzeImage(
  rt: FaceRuntime,
  image: DecodedImage,
  signal: AbortSignal,
): Promise<AnalyzedImage> {
  const models = rt.host.require();
  signal.throwIfAborted();
  const { faces, timings } = await models.engine.analyze(image, signal);
  rt.metrics.stage.observe({ stage: 'detect' }, timings.detectMs / 1000);
  if (faces.length > 0) {
    rt.metrics.stage.observe({ stage: 'align' }, timings.alignMs / 1000);
    rt.metrics.stage.observe({ stage: 'embed' }, timings.embedMs / 1000);
  }
  rt.metrics.facesPerImage.observe(faces.length);
  return { image, faces };
}

/** {@link decodeUpload} then {@link analyzeImage}. */
export async function analyzeUpload(
  rt: FaceRuntime,
  file: UploadedFile,
  signal: AbortSignal,
): Promise<AnalyzedImage> {
  return analyzeImage(rt, await decodeUpload(rt, file), signal);
}

export function uptimeSeconds(rt: FaceRuntime): number {
  return Math.max(0, Math.round((performance.now() - rt.startedAt) / 1000));
}

export function deviceOf(rt: FaceRuntime): string {
  return rt.host.engine?.engine.device ?? (rt.config.FACE_DEVICE === 'cuda' ? 'cuda' : 'cpu');
}

/** Multipart parsing for image uploads: `field` holding at most `maxCount` images. */
export function imageUploads(rt: FaceRuntime, field: string, maxCount: number): RequestHandler[] {
  return multipart({ files: [{ name: field, maxCount }], maxFileBytes: rt.config.MAX_IMAGE_BYTES });
}

/** The files of `field`, or 400 naming the field when none came. */
export function requireUploads(req: Request, field: string, what = 'images'): UploadedFile[] {
  const files = uploadedFiles(req, field);
  if (files.length === 0) {
    throw new BadRequestError(`Send the ${what} in the form field \`${field}\``, {
      param: field,
      code: 'missing_file',
    });
  }
  return files;
}
