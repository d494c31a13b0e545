import { performance } from 'node:perf_hooks';
import {
  createKit,
  serviceAuth,
  childLimits,
  type KitApp,
  type Logger,
  type Resource,
} from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { engineOptions, openOcrEngine, type ReadyEngine } from './adapters/open-engine.js';
import { ocrProcessRunner } from './adapters/process.js';
import type { OcrConfig } from './config.js';
import { createOcrMetrics } from './metrics.js';
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
  /** tesseract, found and warmed up after the server listens (looked for again while missing). */
  readonly engine: Resource<ReadyEngine>;
  /** Stops looking for the engine and kills any engine process still running. */
  close(): Promise<void>;
}

/**
 * The OCR service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `ocr` scope (OCR_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildOcrApp(deps: OcrDeps): OcrService {
  const { config } = deps;
  const auth = serviceAuth(config, { scope: 'ocr', tokenEnv: 'OCR_API_TOKEN', token: config.OCR_API_TOKEN });
  const kit = createKit({
    service: 'ocr',
    title: 'OCR service',
    description:
      'Vietnamese and English text from images and PDFs, with per-line boxes and confidence, on tesseract 5.',
    version: OCR_VERSION,
    config,
    startingReason: 'starting: looking for tesseract',
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const metrics = createOcrMetrics(kit.metrics);
  // Engine processes still running at shutdown are killed (after the engine stops being looked for).
  const runner = kit.own(ocrProcessRunner(childLimits(config)), (r) => r.killAll());
  const retryMs = deps.engineRetryMs ?? 10_000;
  const engine = kit.resource<ReadyEngine>({
    name: 'the OCR engine',
    open: (ctx) =>
      openOcrEngine(
        engineOptions(config, runner, (stage, s) => metrics.stage.observe({ stage }, s)),
        ctx,
      ),
    retry: { firstPauseMs: retryMs, maxPauseMs: retryMs },
    failureReason: (error) => error.message,
    describe: ({ engine: { info }, pdf }) => ({
      fields: { engine: 'tesseract', version: info.version, languages: info.languages, pdf },
    }),
  });
  const rt: OcrRuntime = {
    config,
    engine,
    runner,
    readiness: kit.readiness,
    gate: kit.gate,
    gpu: kit.gpu,
    metrics,
    stats: new PageStats(),
    startedAt: performance.now(),
    version: OCR_VERSION,
  };
  const app = kit.mount([rootRoute(rt), ocrHealthRoute(rt), statusRoute(rt), ocrRoute(rt)]);
  return { kit: app, engine, close: () => app.close() };
}
