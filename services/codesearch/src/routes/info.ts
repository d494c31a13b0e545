import { performance } from 'node:perf_hooks';
import { defineRoute, healthRoute as kitHealthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { HealthResponseSchema, RootResponseSchema, StatusResponseSchema } from '../schemas/api.js';
import type { CodeType } from '../schemas/code-record.js';
import type { CodesearchRuntime } from './runtime.js';

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /search': 'Search codes by text (query, code_types, top_k, hybrid)',
  'GET /code_types': 'Loaded code types with counts and sources; missing types',
  'GET /codes/{type}/{code}': 'One code with its parent, ancestors and children',
  'GET /health': 'Health: 503 with the reason until the code sets are loaded',
  'GET /status': 'Codes, terms, embedding model, requests in work',
  'GET /gpu_status': 'GPU status (this service runs on CPU)',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

export function rootRoute(rt: CodesearchRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information',
    tags: ['info'],
    auth: false,
    response: RootResponseSchema,
    handler: () => ({
      service: 'codesearch',
      version: rt.version,
      port: rt.config.PORT,
      status: rt.readiness.ready ? ('ready' as const) : ('starting' as const),
      docs: '/docs',
      endpoints: ENDPOINTS,
    }),
  });
}

function currentMode(rt: CodesearchRuntime): 'hybrid' | 'lexical' {
  const snap = rt.catalog.snapshot;
  if (snap === undefined || rt.catalog.model === undefined) return 'lexical';
  return [...snap.vectors.values()].some((v) => v.state === 'ready') ? 'hybrid' : 'lexical';
}

export function healthRoute(rt: CodesearchRuntime): AnyRoute {
  return kitHealthRoute({
    readiness: rt.readiness,
    schema: HealthResponseSchema,
    auth: false,
    body: (ready, reason) => {
      const snap = rt.catalog.snapshot;
      return {
        status: ready ? ('healthy' as const) : ('unhealthy' as const),
        ...(reason === undefined ? {} : { reason }),
        codes: snap?.index.size ?? 0,
        types: snap === undefined ? [] : [...snap.index.typeRanges.keys()],
        mode: currentMode(rt),
        damaged_types: snap === undefined ? [] : [...snap.damaged.keys()],
      };
    },
  });
}

export function statusRoute(rt: CodesearchRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'Codes, terms, embedding model, requests in work',
    tags: ['info'],
    response: StatusResponseSchema,
    handler: () => {
      const snap = rt.catalog.snapshot;
      const types: Partial<Record<CodeType, number>> = {};
      for (const [t, [a, b]] of snap?.index.typeRanges ?? new Map<CodeType, readonly [number, number]>())
        types[t] = b - a;
      return {
        service: 'codesearch',
        version: rt.version,
        ready: rt.readiness.ready,
        reason: rt.readiness.reason ?? null,
        uptime_seconds: Math.round((performance.now() - rt.startedAt) / 1000),
        codes: snap?.index.size ?? 0,
        terms: snap?.index.vocabularySize ?? 0,
        types,
        embedding_model: rt.catalog.model?.id ?? null,
        active_requests: rt.gate.running,
        queued_requests: rt.gate.waiting,
        concurrency_limit: rt.gate.limit,
      };
    },
  });
}
