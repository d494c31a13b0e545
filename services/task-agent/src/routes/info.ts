import { defineRoute, healthRoute, type AnyRoute } from '@clinicalsuite/kit';
import { z } from 'zod';
import type { TaskAgentRuntime } from './runtime.js';

/**
 * `/`, `/health` (503 until the store is open) and `/status`. Both answer their own shapes while the
 * store is still opening or failed to open (the reason says which), so they never touch it.
 */

/** The agent's title and description in its OpenAPI document. */
export const API_INFO = {
  title: 'ClinicalSuite task agent',
  description:
    'Runs tasks with an LLM in a bounded plan-and-act loop over skills (medical code search, the ' +
    'reasoning engine, summaries, service checks), records every run and log, fires cron schedules, ' +
    'and chats. SQLite by default, PostgreSQL for several replicas; the task proxy is its client.',
} as const;

export const ENDPOINTS: Readonly<Record<string, string>> = {
  'GET /api/v1/tasks': 'Tasks (status, limit)',
  'POST /api/v1/tasks': 'Create a task (title, description, priority)',
  'GET /api/v1/tasks/{id}': 'A task with its logs and runs',
  'POST /api/v1/tasks/{id}/cancel': 'Cancel a pending or running task',
  'POST /api/v1/tasks/{id}/run': 'Run a finished task again',
  'GET /api/v1/logs': 'Task logs (task_id, limit)',
  'GET /api/v1/runs': 'Latest runs (task_id, limit)',
  'GET /api/v1/stats': 'Tasks per status group',
  'GET /api/v1/skills': 'Skills runs may call',
  'GET|POST /api/v1/schedules': 'Recurring schedules (cron)',
  'PATCH|DELETE /api/v1/schedules/{id}': 'Enable, disable or delete a schedule',
  'POST /api/v1/chat': 'Chat (message, session_id)',
  'DELETE /api/v1/chat/{session_id}': 'Clear a chat session',
  'POST /v1/chat/completions': 'OpenAI-compatible chat',
  'GET /health': 'Health: 200 when the store is open, 503 with the reason otherwise',
  'GET /status': 'Store, LLM, workers, skills, uptime',
  'GET /metrics': 'Prometheus metrics',
  'GET /docs': 'Interactive API documentation',
};

const LlmView = z.object({ url: z.string(), state: z.string(), model: z.string().nullable() });
const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('task-agent'),
  version: z.string(),
  store: z.enum(['sqlite', 'postgresql']),
  llm: LlmView,
  reason: z.string().optional(),
});

/** The open store's kind, before that the configured one (DATABASE_URL or not). */
function storeKind(rt: TaskAgentRuntime): 'sqlite' | 'postgresql' {
  return rt.store.value?.kind ?? (rt.config.DATABASE_URL === undefined ? 'sqlite' : 'postgresql');
}

function llmView(rt: TaskAgentRuntime): z.infer<typeof LlmView> {
  const s = rt.llmStatus();
  return { url: rt.llm.displayUrl, state: s.state, model: s.model };
}

export function infoRoutes(rt: TaskAgentRuntime): AnyRoute[] {
  const uptime = (): number => Math.max(0, Math.round((rt.now() - rt.startedAt) / 1000));
  return [
    defineRoute({
      method: 'get',
      path: '/',
      summary: 'Service information: version, status, endpoints',
      tags: ['info'],
      auth: false,
      handler: () => ({
        service: 'task-agent',
        version: rt.version,
        status: rt.readiness.ready ? 'ready' : 'not_ready',
        docs: '/docs',
        openapi: '/openapi.json',
        endpoints: ENDPOINTS,
      }),
    }),
    healthRoute({
      readiness: rt.readiness,
      schema: HealthSchema,
      auth: false,
      body: (ready, reason) => ({
        status: ready ? ('healthy' as const) : ('unhealthy' as const),
        service: 'task-agent' as const,
        version: rt.version,
        store: storeKind(rt),
        llm: llmView(rt),
        ...(ready || reason === undefined ? {} : { reason }),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/status',
      summary: 'Store, LLM, workers, skills, slots and uptime',
      tags: ['info'],
      handler: () => {
        const s = rt.llmStatus();
        return {
          service: 'task-agent',
          version: rt.version,
          status: rt.readiness.ready ? 'ready' : 'not_ready',
          reason: rt.readiness.reason ?? null,
          store: storeKind(rt),
          llm: { ...llmView(rt), detail: s.detail },
          workers: {
            total: rt.config.TASK_AGENT_WORKERS,
            busy: rt.workers.value?.busy ?? 0,
            claiming: s.state === 'up',
            max_steps: rt.config.TASK_AGENT_MAX_STEPS,
            run_timeout_seconds: rt.config.TASK_AGENT_RUN_TIMEOUT_S,
            lease_ms: rt.config.TASK_AGENT_LEASE_MS,
            max_attempts: rt.config.TASK_AGENT_MAX_ATTEMPTS,
          },
          tasks: rt.workers.value?.stats ?? null,
          skills: rt.skills.map((k) => k.name),
          slots: { total: rt.gate.limit, in_use: rt.gate.running, waiting: rt.gate.waiting },
          uptime_seconds: uptime(),
        };
      },
    }),
  ];
}
