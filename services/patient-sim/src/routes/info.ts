import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { HealthSchema, RootSchema, StatusSchema } from '../schemas/api.js';
import { iso, type PatientSimRuntime } from './runtime.js';

/** `/`, `/health` (503 with the reason until the LLM answers) and `/status`. */

/** The simulator's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'ClinicalSuite patient simulator',
  description:
    'An LLM plays a patient from a case file: stays in character, reveals history only when asked and ' +
    'examination and test results only when examined or ordered, keeps per-session state in memory.',
} as const;

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /patient': 'Say something to a simulated patient (message, patient_id, session_id)',
  'GET /patients': 'The cases (without their diagnoses)',
  'GET /patients/{patient_id}': 'One case: who the patient is, what can be asked (not the answers)',
  'GET /sessions/{session_id}': 'A conversation: transcript, revealed facts, released findings',
  'DELETE /sessions/{session_id}': 'Forget a conversation',
  'GET /health': 'Health: 200 when the LLM answers, 503 with the reason otherwise',
  'GET /status': 'LLM, cases, sessions, slots, uptime',
  'GET /gpu_status': 'GPU status (this service runs on CPU; it reports what it sees)',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

/** `/`, `/health` and `/status`. */
export function infoRoutes(rt: PatientSimRuntime): AnyRoute[] {
  return [rootRoute(rt), healthRouteFor(rt), statusRoute(rt)];
}

function llmView(rt: PatientSimRuntime) {
  const s = rt.monitor.status;
  return { url: rt.llmUrl, state: s.state, model: s.model };
}

export function rootRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/',
    summary: 'Service information: version, port, status, endpoints',
    tags: ['info'],
    auth: false,
    response: RootSchema,
    handler: () => ({
      service: 'patient-sim' as const,
      version: rt.version,
      port: rt.config.PORT,
      status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
      docs: '/docs',
      openapi: '/openapi.json',
      endpoints: ENDPOINTS,
    }),
  });
}

export function healthRouteFor(rt: PatientSimRuntime): AnyRoute {
  return healthRoute({
    readiness: rt.readiness,
    schema: HealthSchema,
    auth: false,
    body: (ready, reason) => ({
      status: ready ? ('healthy' as const) : ('unhealthy' as const),
      service: 'patient-sim' as const,
      version: rt.version,
      llm: llmView(rt),
      cases: rt.cases.size,
      sessions: rt.store.size,
      ...(ready || reason === undefined ? {} : { reason }),
    }),
  });
}

export function statusRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/status',
    summary: 'LLM, cases, sessions, concurrency slots and uptime',
    tags: ['info'],
    response: StatusSchema,
    handler: () => {
      const s = rt.monitor.status;
      return {
        service: 'patient-sim' as const,
        version: rt.version,
        status: rt.readiness.ready ? ('ready' as const) : ('not_ready' as const),
        reason: rt.readiness.reason ?? null,
        llm: { ...llmView(rt), detail: s.detail, checked_at: s.checkedAt === null ? null : iso(s.checkedAt) },
        cases: { count: rt.cases.size, ids: [...rt.cases.keys()] },
        sessions: {
          active: rt.store.size,
          max: rt.store.maxSessions,
          ttl_seconds: Math.round(rt.store.ttlMs / 1000),
          max_turns: rt.store.maxTurns,
          replica_local: true as const,
        },
        slots: {
          total: rt.gate.limit,
          in_use: rt.gate.running,
          waiting: rt.gate.waiting,
          queue_capacity: rt.gate.queueSize,
        },
        uptime_seconds: Math.max(0, Math.round((rt.now() - rt.startedAt) / 1000)),
      };
    },
  });
}
