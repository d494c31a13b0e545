import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { HealthSchema, ModelListSchema, type Health } from '../schemas/chat-completions.js';
import type { MedllmRuntime } from './runtime.js';

/**
 * `GET /health`: the backend's state; 200 while llama-server answers, 502 otherwise (the spec's
 * "backend not ready or stopped"), with the reason. `GET /v1/models`: the served model.
 */

export function healthRouteFor(rt: MedllmRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/health',
    summary: 'Backend health: 200 while llama-server is ready, 502 with the reason otherwise',
    auth: false,
    tags: ['probes'],
    response: HealthSchema,
    responses: { 502: { description: 'Backend not ready or stopped', schema: HealthSchema } },
    handler: ({ res }): Health => {
      const ready = rt.backend.ready !== undefined;
      res.status(ready ? 200 : 502);
      return {
        status: ready ? 'healthy' : 'unhealthy',
        service: 'medllm',
        model: rt.config.SERVED_MODEL_NAME,
        backend: {
          name: 'llama-server',
          state: rt.backend.state,
          restarts: rt.backend.restarts,
          detail: rt.readiness.reason ?? null,
        },
        context_size: rt.config.CONTEXT_SIZE,
        uptime_seconds: Math.max(0, Math.round((rt.now().getTime() - rt.startedAt.getTime()) / 1000)),
      };
    },
  });
}

export function modelsRoute(rt: MedllmRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/v1/models',
    summary: 'The model this service serves',
    tags: ['chat'],
    response: ModelListSchema,
    handler: () => ({
      object: 'list' as const,
      data: [
        {
          id: rt.config.SERVED_MODEL_NAME,
          object: 'model' as const,
          created: Math.floor(rt.startedAt.getTime() / 1000),
          owned_by: 'local',
          max_model_len: rt.config.CONTEXT_SIZE,
          modalities: ['text', 'image'],
        },
      ],
    }),
  });
}
