import { performance } from 'node:perf_hooks';
import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { summarizeGpu } from '@clinicalsuite/kit/gpu';
import { HealthSchema, RootSchema, StatusSchema } from '../schemas/ocr.js';
import type { OcrRuntime } from './runtime.js';

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /ocr': 'Text of an image or PDF with per-line boxes and confidence (multipart: file, language, ...)',
  'GET /health': '200 when tesseract is ready, 503 with the reason',
  'GET /status': 'Engine, languages, limits, slots, pages processed',
  'GET /gpu_status': 'GPU status (none is used: OCR runs on the CPU)',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation (OpenAPI at /openapi.json)',
};

function uptimeSeconds(rt: OcrRuntime): number {
  return Math.max(0, Math.round((performance.now() - rt.startedAt) / 1000));
}

export function rootRoute(rt: OcrRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: name, version, port, status, docs, endpoints',
    tags: ['info'],
    response: RootSchema,
    handler: () => ({
      service: 'ocr' as const,
      version: rt.version,
      port: rt.config.PORT,
      status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
      ...(rt.readiness.reason === undefined ? {} : { reason: rt.readiness.reason }),
      docs: '/docs' as const,
      endpoints: ENDPOINTS,
    }),
  });
}

export function ocrHealthRoute(rt: OcrRuntime): AnyRoute {
  return healthRoute({
    readiness: rt.readiness,
    schema: HealthSchema,
    body: (ready, reason) => {
      const info = rt.engine.value?.engine.info;
      return {
        status: ready ? ('healthy' as const) : ('unhealthy' as const),
        service: 'ocr' as const,
        engine: info === undefined ? 'tesseract (not ready)' : `tesseract ${info.version}`,
        ...(ready || reason === undefined ? {} : { reason }),
      };
    },
  });
}

export function statusRoute(rt: OcrRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Engine, installed languages, limits, slots in use, pages processed, uptime, GPU',
    tags: ['info'],
    response: StatusSchema,
    handler: async () => {
      const info = rt.engine.value?.engine.info;
      const { config } = rt;
      return {
        service: 'ocr' as const,
        version: rt.version,
        status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
        reason: rt.readiness.reason ?? null,
        engine: {
          name: 'tesseract' as const,
          version: info?.version ?? null,
          languages: [...(info?.languages ?? [])],
          orientation_detection: info?.osd ?? false,
          pdf: rt.engine.value?.pdf ?? false,
        },
        default_language: config.OCR_DEFAULT_LANGUAGE,
        limits: {
          max_file_bytes: config.MAX_FILE_BYTES,
          max_image_pixels: config.MAX_IMAGE_PIXELS,
          max_pages: config.MAX_PAGES,
          pdf_dpi: config.PDF_DPI,
          pdf_max_dpi: config.PDF_MAX_DPI,
          process_timeout_ms: config.OCR_PROCESS_TIMEOUT_MS,
        },
        slots: {
          total: rt.gate.limit,
          in_use: rt.gate.running,
          waiting: rt.gate.waiting,
          queue_capacity: rt.gate.queueSize,
        },
        engine_processes: rt.runner.running,
        pages_processed: rt.stats.pages,
        average_page_ms: rt.stats.averageMs,
        uptime_seconds: uptimeSeconds(rt),
        gpu: summarizeGpu(await rt.gpu.read()),
      };
    },
  });
}
