import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { summarizeGpu } from '@clinicalsuite/kit/gpu';
import { GpuStatusResponseSchema, HealthSchema } from '../api/schemas.js';
import { basesRead, engineFailure } from '../adapters/pipeline.js';
import { engineView } from '../pipeline/diagnose.js';
import type { ReasoningRuntime } from './runtime.js';

/** `/`, `/health` (503 with the reason until a scorable base and the engine are loaded), GPU status. */

/** The engine's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'ClinicalSuite clinical reasoning engine',
  description:
    'Free clinical text (Vietnamese or English) and/or structured findings in, ranked diagnoses with ' +
    'calibrated probabilities out: rule pass + LLM extractor, clinical map and ICD-10-CM code lookup, a ' +
    'naive Bayes model with leak terms scored as an ONNX graph (CPU or CUDA, micro-batched), and the ' +
    'supporting and opposing findings, next findings by information gain, and timings per layer.',
} as const;

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /api/v1/diagnosis': 'Ranked diagnoses from free text and/or structured findings',
  'GET /api/v1/gpu/status': 'GPU summary and the engine (device, fallback, batches)',
  'GET /health':
    'Health: 200 when a scorable knowledge base and the engine are loaded, 503 with the reason otherwise',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

function engineStatus(rt: ReasoningRuntime) {
  const p = rt.pipeline.value;
  if (p === undefined) return null;
  const stats = p.engine.stats();
  return {
    ...engineView(p.engine.info),
    requested: rt.config.REASONING_DEVICE,
    fallback_reason: p.deviceReason,
    batches: stats.runs,
    requests: stats.requestsScored,
    mean_batch_size: stats.runs === 0 ? 0 : stats.requestsScored / stats.runs,
  };
}

export function infoRoutes(rt: ReasoningRuntime): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/',
      summary: 'Service information: version, status, endpoints',
      tags: ['info'],
      auth: false,
      handler: () => ({
        service: 'reasoning',
        version: rt.version,
        status: rt.readiness.ready ? 'ready' : 'not_ready',
        reason: rt.readiness.reason ?? null,
        docs: '/docs',
        openapi: '/openapi.json',
        endpoints: ENDPOINTS,
      }),
    }),
    healthRoute({
      readiness: rt.readiness,
      schema: HealthSchema,
      auth: false,
      body: (ready, reason) => {
        const p = rt.pipeline.value;
        return {
          status: ready ? ('healthy' as const) : ('unhealthy' as const),
          service: 'reasoning' as const,
          version: rt.version,
          ...(ready || reason === undefined ? {} : { reason }),
          knowledge_bases: basesRead(p, rt.pipeline.error).map((b) => ({
            id: b.id,
            version: b.version,
            conditions: b.report.conditions.defined,
            scorable: b.report.conditions.scorable,
          })),
          engine: p === undefined ? null : { kind: p.engine.info.kind, device: p.engine.info.device },
          llm: rt.config.LLM_URL ?? null,
          code_search: rt.config.CODE_SEARCH_URL ?? null,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/gpu/status',
      summary: "GPU summary (the kit's) plus the engine's execution provider and batching counts",
      description:
        'Without an NVIDIA GPU: `available: false`, `device: "cpu"`. `engine.fallback_reason` says why the engine ' +
        'runs elsewhere than REASONING_DEVICE asked; `batches` < `requests` shows micro-batching at work.',
      tags: ['gpu'],
      response: GpuStatusResponseSchema,
      handler: async () => ({
        ...summarizeGpu(await rt.gpu.read()),
        engine: engineStatus(rt),
        engine_reason:
          rt.pipeline.value === undefined
            ? (engineFailure(rt.pipeline.error) ?? rt.readiness.reason ?? 'starting')
            : null,
      }),
    }),
  ];
}
