import { basename } from 'node:path';
import { defineRoute, healthRoute, type AnyRoute, type Readiness } from '@clinicalsuite/kit';
import { summarizeGpu, type GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { BACKEND, SERVICE_NAME, healthBody, isoWithoutZone } from '../domain/health.js';
import { ModelListSchema } from '../schemas/chat-completions.js';
import { HealthSchema, StatusSchema, type Status } from '../schemas/health.js';
import type { LlmEngine } from '../adapters/engine.js';
import type { LlmRuntime } from './runtime.js';

/** `/health` (the spec's body, 503 until the model is loaded), `/status` and `/v1/models`. */

export function healthRouteFor(rt: LlmRuntime, readiness: Readiness): AnyRoute {
  return healthRoute({
    readiness,
    schema: HealthSchema,
    body: (ready, reason) =>
      healthBody({
        ready,
        reason,
        model: rt.config.MODEL_ALIAS,
        loading: rt.host.state === 'loading',
        now: rt.now(),
      }),
  });
}

export function statusRoute(rt: LlmRuntime, readiness: Readiness, gpu: GpuStatusReader): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Service status: model, context, slots in use, queue, uptime, GPU',
    tags: ['probes'],
    response: StatusSchema,
    handler: async (): Promise<Status> => {
      const engine = rt.host.engine;
      const d = engine?.description;
      const now = rt.now();
      const state = rt.host.state;
      return {
        service: SERVICE_NAME,
        status: readiness.ready
          ? 'ready'
          : state === 'loading'
            ? 'loading'
            : state === 'failed'
              ? 'failed'
              : 'not_ready',
        reason: readiness.reason ?? null,
        backend: { name: BACKEND, version: d?.backendVersion ?? 'not loaded', gpu: d?.gpu ?? null },
        model: {
          id: rt.config.MODEL_ALIAS,
          path: rt.config.modelPath,
          file: basename(rt.config.modelPath),
          loaded: engine !== undefined,
          size_bytes: d?.sizeBytes ?? null,
          architecture: d?.architecture ?? null,
          name: d?.name ?? null,
          license: licenseOf(rt),
          chat_template: d?.chatTemplate ?? null,
        },
        context_size: engine?.contextSize ?? rt.config.CONTEXT_SIZE,
        threads: rt.config.threads,
        uv_threadpool_size: rt.config.uvThreadpoolSize,
        gpu_layers: d?.gpuLayers ?? rt.config.GPU_LAYERS,
        slots: {
          total: rt.gate.limit,
          in_use: rt.gate.running,
          waiting: rt.gate.waiting,
          queue_capacity: rt.gate.queueSize,
        },
        context_tokens_in_use: engine?.contextTokensInUse() ?? 0,
        batching: batchingOf(engine),
        uptime_seconds: Math.max(0, Math.round((now.getTime() - rt.startedAt.getTime()) / 1000)),
        timestamp: isoWithoutZone(now),
        gpu: summarizeGpu(await gpu.read()),
      };
    },
  });
}

export function modelsRoute(rt: LlmRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/v1/models',
    summary: 'The model this service serves, by the name clients use',
    tags: ['chat'],
    response: ModelListSchema,
    handler: () => ({
      object: 'list' as const,
      data: [
        {
          id: rt.config.MODEL_ALIAS,
          object: 'model' as const,
          created: Math.floor(rt.startedAt.getTime() / 1000),
          owned_by: 'clinicalsuite',
          root: basename(rt.config.modelPath),
          max_model_len: rt.host.engine?.contextSize ?? rt.config.CONTEXT_SIZE,
          name: rt.host.engine?.description.name ?? null,
          license: licenseOf(rt),
        },
      ],
    }),
  });
}

/** The manifest's licence for the manifest's file, else what the GGUF says, else null (unknown). */
function licenseOf(rt: LlmRuntime): string | null {
  return rt.config.manifestModel?.license ?? rt.host.engine?.description.license ?? null;
}

function batchingOf(engine: LlmEngine | undefined): Status['batching'] {
  const { steps, sequences } = engine?.batching() ?? { steps: 0, sequences: 0 };
  return { steps, mean_batch_size: steps === 0 ? 0 : Math.round((sequences / steps) * 100) / 100 };
}

/** The service's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'ClinicalSuite text LLM',
  description:
    'The spec’s text LLM (`alpha2_service`): `/chat` and OpenAI-compatible `/v1/chat/completions` on ' +
    'node-llama-cpp. Every route but the probes needs `Authorization: Bearer <API_TOKEN>`.',
} as const;
