import { performance } from 'node:perf_hooks';
import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { availableLanguages } from '../domain/routing.js';
import type { BackendStatus } from '../domain/types.js';
import { HealthSchema, RootSchema, StatusSchema } from '../schemas/stt.js';
import { backendStatuses, type SttRuntime } from './runtime.js';

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /transcribe': 'Transcribe an audio file (file, language vi|en, backend)',
  'GET /health': 'Health: 200 when a backend is ready, 503 with the reason until then',
  'GET /status': 'Backends, languages, limits, slots, processing times',
  'GET /gpu_status': 'GPU name, memory, utilization, temperature',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

function byId(statuses: readonly BackendStatus[]) {
  return Object.fromEntries(
    statuses.map((b) => [
      b.id,
      { state: b.state, languages: [...b.languages], engine: b.engine, model: b.model, reason: b.reason },
    ]),
  );
}

export function rootRoute(rt: SttRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: name, version, port, status, docs',
    tags: ['info'],
    response: RootSchema,
    handler: () => ({
      service: 'stt' as const,
      version: rt.version,
      port: rt.config.PORT,
      status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
      docs: '/docs',
      languages: availableLanguages(backendStatuses(rt)),
      endpoints: ENDPOINTS,
    }),
  });
}

export function healthRoute(rt: SttRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/health',
    summary: 'Health: 200 when a recognition backend is ready, 503 with the reason until then',
    tags: ['probes'],
    auth: false,
    response: HealthSchema,
    responses: {
      503: { description: 'No backend ready yet (or shutting down), with the reason', schema: HealthSchema },
    },
    handler: ({ res }) => {
      const statuses = backendStatuses(rt);
      const ready = rt.readiness.ready;
      res.status(ready ? 200 : 503);
      return {
        status: ready ? ('healthy' as const) : ('unhealthy' as const),
        service: 'stt' as const,
        port: rt.config.PORT,
        languages: availableLanguages(statuses),
        backends: byId(statuses),
        ...(ready ? {} : { reason: rt.readiness.reason ?? 'starting' }),
      };
    },
  });
}

export function statusRoute(rt: SttRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Backends and their models, languages, limits, slots in use, processing times',
    tags: ['info'],
    response: StatusSchema,
    handler: () => {
      const statuses = backendStatuses(rt);
      return {
        service: 'stt' as const,
        version: rt.version,
        status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
        reason: rt.readiness.reason ?? null,
        languages: availableLanguages(statuses),
        backends: byId(statuses),
        pocketsphinx_warm_processes: rt.backends.get('pocketsphinx')?.warmProcesses ?? 0,
        limits: {
          max_audio_bytes: rt.config.STT_MAX_AUDIO_BYTES,
          max_audio_seconds: rt.config.STT_MAX_AUDIO_SECONDS,
          default_language: rt.config.STT_DEFAULT_LANGUAGE,
        },
        slots: {
          total: rt.gate.limit,
          in_use: rt.gate.running,
          waiting: rt.gate.waiting,
          queue_capacity: rt.gate.queueSize,
        },
        transcriptions: rt.stats.count,
        average_processing_time_ms: rt.stats.averageMs,
        uptime_seconds: Math.max(0, Math.round((performance.now() - rt.startedAt) / 1000)),
      };
    },
  });
}
