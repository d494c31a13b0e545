import { z } from 'zod';
import { ACTIONS } from './actions.js';

/** Response bodies of the task proxy (for /docs) and the documented form of its action request. */

export const LoginResponseSchema = z.object({
  authenticated: z.literal(true),
  user: z.string(),
});

export const LogoutResponseSchema = z.object({
  authenticated: z.literal(false),
  signed_out: z.boolean().describe('Whether a session ended (false: there was none)'),
});

const AgentViewSchema = z.object({
  url: z.string(),
  state: z.enum(['unknown', 'online', 'offline']),
  detail: z.string().nullable().describe('Why it is offline'),
  checked_at: z.string().nullable(),
});

const StoreViewSchema = z.object({
  kind: z.enum(['sqlite', 'postgresql', 'none']).describe('Where offline answers come from'),
  ok: z.boolean().nullable().describe('Whether the store answers (null: none configured)'),
  detail: z.string().nullable(),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('task-proxy'),
  version: z.string(),
  agent: AgentViewSchema,
  store: StoreViewSchema,
  users: z.number().int(),
  sessions: z.number().int(),
  reason: z.string().optional(),
});

export const RootSchema = z.object({
  service: z.literal('task-proxy'),
  version: z.string(),
  status: z.enum(['ready', 'not_ready']),
  authenticated: z.boolean(),
  user: z.string().nullable(),
  endpoints: z.record(z.string(), z.string()),
  actions: z.array(z.string()),
  docs: z.string(),
});

/**
 * The action form as /docs shows it. Every field is `unknown` to the kit's validation: the route
 * reads them itself, so a missing session is 401 before anything, and a bad field is 400 naming it.
 */
const field = (description: string) => z.unknown().optional().describe(description);
export const ActionFieldsSchema = z.looseObject({
  action: field(`One of ${ACTIONS.join(', ')}`),
  message: field('chat: the message (string)'),
  session_id: field('chat (optional), clear_history (required): 1-128 letters, digits, ".", "_", ":", "-"'),
  limit: field(
    'list_tasks (default 50, at most 500), get_task_logs (default 100, at most 1000), get_runs (default 50, at most 500); a larger one is lowered to the maximum',
  ),
  status: field(
    'list_tasks: a status name of any group (pending, queued, waiting, running, in_progress, …) or all',
  ),
  task_id: field(
    'get_task, cancel_task, delete_task (required); get_task_logs, get_runs (optional): a positive integer',
  ),
  title: field('create_task (required; `name` is accepted too)'),
  description: field('create_task (optional)'),
  priority: field(
    'create_task: 1 (lowest) to 10 (most urgent), or low (2), normal (5), high (8), urgent (10); default 5',
  ),
});

export const ActionResponseSchema = z
  .record(z.string(), z.unknown())
  .describe(
    'By action: status → {status: online|offline}; chat → {response, model, session_id}; list_tasks → {tasks}; ' +
      'get_task → {task, logs, runs}; create_task → {id, status} (offline also queued: true and message); ' +
      'cancel_task → {cancelled}; delete_task → {deleted, id}; get_task_logs → {logs}; get_runs → {runs}; ' +
      'get_stats → {stats: {total, pending, running, done, failed, cancelled}}; get_skills → {skills}; ' +
      'get_schedules → {schedules}; clear_history → {cleared}',
  );
