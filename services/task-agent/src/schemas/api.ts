import { chatCompletionRequestSchema } from '@clinicalsuite/kit/llm';
import { z } from 'zod';
import {
  LOG_LEVELS,
  PRIORITY_DEFAULT,
  PRIORITY_MAX,
  PRIORITY_MIN,
  RUN_STATUSES,
  TASK_STATUSES,
} from '../domain/types.js';

/**
 * Request and response bodies of the task agent's API (the task proxy's upstream). The records are
 * the ones in domain/types.ts; these schemas validate requests and document responses in /docs.
 */

const iso = z.string().describe('ISO 8601 UTC time');

export const TaskSchema = z.object({
  id: z.number().int(),
  title: z.string(),
  description: z.string(),
  priority: z.number().int().describe(`${PRIORITY_MIN} (lowest) to ${PRIORITY_MAX} (most urgent)`),
  status: z.enum(TASK_STATUSES),
  result: z.string().nullable(),
  attempts: z.number().int(),
  schedule_id: z.number().int().nullable(),
  created_at: iso,
  updated_at: iso,
});

export const RunSchema = z.object({
  id: z.number().int(),
  task_id: z.number().int(),
  status: z.enum(RUN_STATUSES),
  worker: z.string(),
  steps: z.number().int(),
  started_at: iso,
  finished_at: iso.nullable(),
  output: z.string().nullable(),
  error: z.string().nullable(),
});

export const LogSchema = z.object({
  id: z.number().int(),
  task_id: z.number().int(),
  run_id: z.number().int().nullable(),
  level: z.enum(LOG_LEVELS),
  message: z.string(),
  created_at: iso,
});

export const ScheduleSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  cron: z.string(),
  timezone: z.string(),
  title: z.string(),
  description: z.string(),
  priority: z.number().int(),
  enabled: z.boolean(),
  next_run_at: iso.nullable(),
  last_run_at: iso.nullable(),
  last_task_id: z.number().int().nullable(),
  created_at: iso,
  updated_at: iso,
});

export const SkillSchema = z.object({
  name: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
  service: z.string().nullable(),
});

export const StatsSchema = z.object({
  total: z.number().int(),
  pending: z.number().int(),
  running: z.number().int(),
  done: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
});

/**
 * Free text that is stored: PostgreSQL's `text` can not hold a NUL character (U+0000), so a request
 * carrying one is refused here (422 naming the field) before any work, on either store.
 */
function storableText(field: string): z.ZodString {
  return z
    .string()
    .refine((v) => !v.includes('\u0000'), `${field} must not contain NUL characters (\\u0000)`);
}

const priority = z
  .number()
  .int()
  .min(PRIORITY_MIN, `priority must be ${PRIORITY_MIN} to ${PRIORITY_MAX}`)
  .max(PRIORITY_MAX, `priority must be ${PRIORITY_MIN} to ${PRIORITY_MAX}`)
  .default(PRIORITY_DEFAULT);

export function createTaskSchema(limits: { titleChars: number; descriptionChars: number }) {
  return z.object({
    title: storableText('title')
      .trim()
      .min(1, 'title must not be empty')
      .max(limits.titleChars, `title must be at most ${limits.titleChars} characters`),
    description: storableText('description')
      .max(limits.descriptionChars, `description must be at most ${limits.descriptionChars} characters`)
      .default(''),
    priority,
  });
}

export function createScheduleSchema(limits: { titleChars: number; descriptionChars: number }) {
  return createTaskSchema(limits).extend({
    name: storableText('name').trim().min(1).max(100),
    cron: storableText('cron')
      .trim()
      .min(1)
      .max(200)
      .describe('Five fields (minute hour day month weekday), or six with seconds first'),
    timezone: storableText('timezone').trim().min(1).max(64).default('UTC').describe('IANA time zone'),
    enabled: z.boolean().default(true),
  });
}

export const UpdateScheduleSchema = z.object({ enabled: z.boolean() });

export const IdParamsSchema = z.object({
  id: z
    .string()
    .regex(/^\d{1,15}$/, 'must be a positive integer')
    .transform(Number),
});

const limit = z
  .string()
  .regex(/^\d{1,6}$/, 'limit must be a positive integer')
  .transform(Number)
  .optional();
const taskId = z
  .string()
  .regex(/^\d{1,15}$/, 'task_id must be a positive integer')
  .transform(Number)
  .optional();

export const ListTasksQuerySchema = z.object({ status: z.string().optional(), limit });
export const ListLogsQuerySchema = z.object({ task_id: taskId, limit });

export const TaskDetailSchema = z.object({
  task: TaskSchema,
  logs: z.array(LogSchema),
  runs: z.array(RunSchema),
});
export const CancelResponseSchema = z.object({ cancelled: z.boolean(), task: TaskSchema });

export function chatRequestSchema(maxChars: number) {
  return z.object({
    message: storableText('message')
      .trim()
      .min(1, 'message must not be empty')
      .max(maxChars, `message must be at most ${maxChars} characters`),
    session_id: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'session_id: 1-128 letters, digits, . _ : -')
      .optional(),
  });
}

export const ChatResponseSchema = z.object({
  response: z.string(),
  model: z
    .string()
    .describe('The agent’s name, TASK_AGENT_MODEL_NAME (the LLM behind it: /health’s llm.model)'),
  session_id: z.string(),
});
export const SessionParamsSchema = z.object({
  session_id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1-128 letters, digits, . _ : -'),
});

export const AgentChatCompletionRequestSchema = chatCompletionRequestSchema({
  model: z
    .string()
    .nullable()
    .default(null)
    .describe("The agent's name (TASK_AGENT_MODEL_NAME) or its LLM model's; the reply names the agent"),
  temperature: 0.7,
  maxTokens: 1024,
});
