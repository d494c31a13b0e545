import { performance } from 'node:perf_hooks';
import {
  Readiness,
  serviceAuth,
  buildApp,
  childLimits,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { EngineHost } from './adapters/engine-host.js';
import type { Stage } from './adapters/ocr-engine.js';
import { ocrProcessRunner } from './adapters/process.js';
import type { OcrConfig } from './config.js';
import { createOcrMetrics, type OcrMetrics } from './metrics.js';
import { ocrHealthRoute, rootRoute, statusRoute } from './routes/info.js';
import { ocrRoute } from './routes/ocr.js';
import { PageStats, type OcrRuntime } from './routes/runtime.js';

export const OCR_VERSION = '1.0.0';

export interface OcrDeps {
  readonly config: OcrConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly processMetrics?: boolean;
  /** How often a missing engine is looked for again (default 10 s). */
  readonly engineRetryMs?: number;
}

export interface OcrService {
  readonly kit: KitApp;
  readonly host: EngineHost;
  /** Stops looking for the engine and kills any engine process still running. */
  close(): Promise<void>;
}

/**
 * The OCR service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `ocr` scope (OCR_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildOcrApp(deps: OcrDeps): OcrService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'ocr', level: config.LOG_LEVEL });
  const readiness = new Readiness('starting: looking for tesseract');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const runner = ocrProcessRunner(childLimits(config));
  // The metrics exist once the app is built; the engine's stage timings reach them through this.
  let metrics: OcrMetrics | undefined;
  const observe = (stage: Stage, seconds: number): void => metrics?.stage.observe({ stage }, seconds);
  const host = new EngineHost({
    runner,
    tesseract: {
      binary: config.TESSERACT_PATH,
      tessdataDir: config.TESSDATA_PREFIX,
      timeoutMs: config.OCR_PROCESS_TIMEOUT_MS,
    },
    pdf: { pdfinfo: config.PDFINFO_PATH, timeoutMs: config.OCR_PROCESS_TIMEOUT_MS },
    defaultLanguage: config.OCR_DEFAULT_LANGUAGE,
    readiness,
    logger,
    retryMs: deps.engineRetryMs ?? 10_000,
    observe,
  });
  const auth = serviceAuth(config, { scope: 'ocr', tokenEnv: 'OCR_API_TOKEN', token: config.OCR_API_TOKEN });
  const startedAt = performance.now();
  const kit = buildApp({
    service: 'ocr',
    title: 'OCR service',
    description:
      'Vietnamese and English text from images and PDFs, with per-line boxes and confidence, on tesseract 5.',
    version: OCR_VERSION,
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: (parts) => {
      metrics = createOcrMetrics(parts.metrics);
      const rt: OcrRuntime = {
        config,
        host,
        runner,
        readiness,
        gate: parts.gate,
        gpu,
        metrics,
        stats: new PageStats(),
        startedAt,
        version: OCR_VERSION,
      };
      return [rootRoute(rt), ocrHealthRoute(rt), statusRoute(rt), ocrRoute(rt)];
    },
  });
  return {
    kit,
    host,
    close: () => {
      host.close();
      runner.killAll();
      return Promise.resolve();
    },
  };
}
