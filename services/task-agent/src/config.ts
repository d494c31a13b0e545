import { join } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';

/**
 * The task agent's configuration: the kit's variables and the agent's own. Parsed once at start-up;
 * a bad value stops the service with a message naming it.
 */

export const taskAgentConfigSchema = kitConfigSchema({
  port: 8007,
  maxConcurrency: 4,
  queueSize: 64,
  queueTimeoutMs: 60_000,
  requestTimeoutMs: 600_000,
  bodyLimit: '1mb',
}).extend({
  /** Base URL of the suite's text LLM (OpenAI-compatible); the runner and the operator set it. */
  LLM_URL: env.url(),
  /** Bearer token for the LLM (the suite's API_TOKEN). */
  API_TOKEN: z.string().optional(),
  /** The token the task proxy (and any other client) presents; unset: no token is asked for. */
  TASK_AGENT_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** PostgreSQL for several replicas (`postgres://user:pass@host/db`); unset: SQLite on DATA_DIR. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /** The SQLite file; default `$DATA_DIR/task-agent.sqlite` (DATA_DIR default ./data). */
  TASK_AGENT_DB: z.string().min(1).optional(),
  /** Model name sent to the LLM; default: the first model its /v1/models lists. */
  TASK_AGENT_MODEL: z.string().min(1).optional(),
  /** Name the agent answers `model` with on chat (its own identity, not the LLM's file). */
  TASK_AGENT_MODEL_NAME: z.string().min(1).default('task-agent'),
  TASK_AGENT_TEMPERATURE: env.number({ min: 0, max: 2 }).default(0.2),
  /** A fixed sampling seed for runs (reproducible plans); unset: the LLM's own randomness. */
  TASK_AGENT_SEED: env.int({ min: 0, max: 2 ** 31 - 1 }).optional(),
  /** Tokens at most per plan step (one JSON action). */
  TASK_AGENT_STEP_MAX_TOKENS: env.int({ min: 16, max: 8192 }).default(384),
  /** Longest final answer of a run, in characters (the step grammar bounds it). */
  TASK_AGENT_ANSWER_MAX_CHARS: env.int({ min: 10, max: 100_000 }).default(4000),
  /** Longest `thought` of a step, in characters. */
  TASK_AGENT_THOUGHT_MAX_CHARS: env.int({ min: 10, max: 10_000 }).default(400),
  /** Tokens at most per chat reply (when the request sets none). */
  TASK_AGENT_CHAT_MAX_TOKENS: env.int({ min: 1, max: 8192 }).default(1024),
  /** Workers in this replica: tasks run at once. */
  TASK_AGENT_WORKERS: env.int({ min: 0, max: 64 }).default(2),
  /** Plan-and-act steps per run; the last one must answer. */
  TASK_AGENT_MAX_STEPS: env.int({ min: 1, max: 50 }).default(6),
  /** Time budget of one run, in seconds. */
  TASK_AGENT_RUN_TIMEOUT_S: env.int({ min: 1, max: 86_400 }).default(600),
  /** A worker's claim on a task lasts this long unless renewed (every third of it). */
  TASK_AGENT_LEASE_MS: env.int({ min: 500, max: 3_600_000 }).default(30_000),
  /** Runs a task gets (a lease that expired counts) before it is failed. */
  TASK_AGENT_MAX_ATTEMPTS: env.int({ min: 1, max: 20 }).default(3),
  /** Finished tasks (with their runs and logs) are deleted this many days after they last changed; 0 keeps them. */
  TASK_AGENT_RETENTION_DAYS: env.int({ min: 0, max: 36_500 }).default(0),
  /** How often idle workers look for tasks queued by other replicas or the proxy. */
  TASK_AGENT_POLL_MS: env.int({ min: 10, max: 60_000 }).default(1000),
  /** How often schedules are checked and expired leases recovered. */
  TASK_AGENT_TICK_MS: env.int({ min: 10, max: 60_000 }).default(1000),
  /** Deadline of one LLM call, in ms. */
  TASK_AGENT_LLM_TIMEOUT_MS: env.ms({ min: 100 }).default(300_000),
  TASK_AGENT_LLM_RETRIES: env.int({ min: 0, max: 10 }).default(2),
  TASK_AGENT_LLM_BACKOFF_MS: env.int({ min: 0, max: 60_000 }).default(250),
  TASK_AGENT_LLM_PROBE_MS: env.int({ min: 10, max: 600_000 }).default(5000),
  /** Deadline of one skill's call to a suite service, in ms. */
  TASK_AGENT_SKILL_TIMEOUT_MS: env.int({ min: 100, max: 600_000 }).default(60_000),
  /** Characters of a skill's answer the LLM sees (the rest is cut, and the log says so). */
  TASK_AGENT_OBSERVATION_CHARS: env.int({ min: 100, max: 100_000 }).default(2000),
  /** Messages of a chat session sent with each turn (oldest dropped first). */
  TASK_AGENT_CHAT_HISTORY: env.int({ min: 0, max: 1000 }).default(20),
  TASK_AGENT_MAX_MESSAGE_CHARS: env.int({ min: 1, max: 1_000_000 }).default(8000),
  TASK_AGENT_MAX_TITLE_CHARS: env.int({ min: 1, max: 10_000 }).default(200),
  TASK_AGENT_MAX_DESCRIPTION_CHARS: env.int({ min: 1, max: 1_000_000 }).default(20_000),
  /** Replaces the built-in system prompt of chat. */
  TASK_AGENT_SYSTEM_PROMPT: z.string().min(1).optional(),
  /** Suite services the skills call; a skill whose service is unset is not offered. */
  CODE_SEARCH_URL: env.url().optional(),
  REASONING_URL: env.url().optional(),
  /** The bearer tokens the code search and the reasoning engine accept (each service's own). */
  CODE_SEARCH_API_TOKEN: z.string().optional(),
  REASONING_API_TOKEN: z.string().optional(),
  /** Services the `check_service` skill may ask for /health: `name=url,name=url`. */
  TASK_AGENT_SERVICES: z
    .string()
    .default('')
    .transform((s, ctx) => {
      const out: Record<string, string> = {};
      for (const part of s.split(',').map((p) => p.trim())) {
        if (part === '') continue;
        const eq = part.indexOf('=');
        const name = part.slice(0, eq).trim();
        const url = part.slice(eq + 1).trim();
        if (eq <= 0 || !/^[a-z][a-z0-9_-]*$/.test(name) || !/^https?:\/\//.test(url)) {
          ctx.addIssue({ code: 'custom', message: `"${part}" is not name=http(s)://url` });
          continue;
        }
        out[name] = url;
      }
      return out;
    }),
});

export type TaskAgentConfig = z.output<typeof taskAgentConfigSchema> & {
  /** The SQLite file (used when DATABASE_URL is unset). */
  readonly sqlitePath: string;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadTaskAgentConfig(source: Env = process.env): TaskAgentConfig {
  const config = loadConfig(taskAgentConfigSchema, source);
  return {
    ...config,
    sqlitePath: config.TASK_AGENT_DB ?? join(config.DATA_DIR ?? 'data', 'task-agent.sqlite'),
  };
}
