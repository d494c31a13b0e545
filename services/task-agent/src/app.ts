import { randomUUID } from 'node:crypto';
import {
  ConfigError,
  createKit,
  createLogger,
  serviceAuth,
  type AnyRoute,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, LlmMonitor } from '@clinicalsuite/kit/llm';
import { buildSkills } from './adapters/skills.js';
import { storeResource } from './adapters/store.js';
import { workersResource } from './adapters/worker-pool.js';
import type { TaskAgentConfig } from './config.js';
import { validateSkills, type AnySkill } from './domain/skills.js';
import { createTaskAgentMetrics } from './metrics.js';
import { chatRoutes } from './routes/chat.js';
import { infoRoutes } from './routes/info.js';
import type { TaskAgentRuntime } from './routes/runtime.js';
import { scheduleRoutes } from './routes/schedules.js';
import { taskRoutes } from './routes/tasks.js';
import type { TaskStore } from './store/types.js';

export const SERVICE = 'task_agent';
export const VERSION = '0.1.0';

export interface TaskAgentDeps {
  readonly config: TaskAgentConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** Epoch ms (timestamps, schedules, leases). */
  readonly now?: () => number;
  readonly processMetrics?: boolean;
  /** Opens the store (default: PostgreSQL by DATABASE_URL, else SQLite). */
  readonly openStore?: () => Promise<TaskStore>;
}

export interface TaskAgentService {
  readonly kit: KitApp;
  readonly skills: readonly AnySkill[];
  readonly monitor: LlmMonitor;
  /** The open store (throws 503 until it is open). */
  readonly store: TaskStore;
  /**
   * Opens the store (retrying with backoff while the database is unreachable: /health says why)
   * and publishes the skill catalogue, then starts the LLM monitor, the workers and the tick.
   * Resolves when the store is open (or the service closed first).
   */
  start(): Promise<void>;
  /** Stops the workers (interrupted runs go back to the queue) and closes the store. */
  close(): Promise<void>;
}

export function buildTaskAgentApp(deps: TaskAgentDeps): TaskAgentService {
  const { config } = deps;
  const now = deps.now ?? (() => Date.now());
  const auth = serviceAuth(config, {
    scope: 'task_agent',
    tokenEnv: 'TASK_AGENT_API_TOKEN',
    token: config.TASK_AGENT_API_TOKEN,
  });
  const kit = createKit({
    service: SERVICE,
    title: 'ClinicalSuite task agent',
    version: VERSION,
    description:
      'Runs tasks with an LLM in a bounded plan-and-act loop over skills (medical code search, the ' +
      'reasoning engine, summaries, service checks), records every run and log, fires cron schedules, ' +
      'and chats. SQLite by default, PostgreSQL for several replicas; the task proxy is its client.',
    config,
    logger: deps.logger ?? createLogger({ service: 'task-agent', level: config.LOG_LEVEL }),
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
  });
  const llm = new LlmClient({
    baseUrl: config.LLM_URL,
    metrics: kit.metrics,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.TASK_AGENT_LLM_TIMEOUT_MS,
    retries: config.TASK_AGENT_LLM_RETRIES,
    backoffMs: config.TASK_AGENT_LLM_BACKOFF_MS,
  });
  // The LLM's state does not decide readiness (tasks, logs and schedules work without it); it
  // decides whether workers claim tasks.
  const monitor = new LlmMonitor({
    client: llm,
    logger: kit.logger,
    intervalMs: config.TASK_AGENT_LLM_PROBE_MS,
    configuredModel: config.TASK_AGENT_MODEL,
    modelEnv: 'TASK_AGENT_MODEL',
    now,
  });
  const model = (): string => monitor.status.model ?? config.TASK_AGENT_MODEL ?? 'default';
  const skills = buildSkills({
    codeSearchUrl: config.CODE_SEARCH_URL,
    codeSearchToken: config.CODE_SEARCH_API_TOKEN,
    reasoningUrl: config.REASONING_URL,
    reasoningToken: config.REASONING_API_TOKEN,
    services: config.TASK_AGENT_SERVICES,
    timeoutMs: config.TASK_AGENT_SKILL_TIMEOUT_MS,
    llm,
    model,
    metrics: kit.metrics,
  });
  const problems = validateSkills(skills);
  if (problems.length > 0) throw new ConfigError(problems);
  const store = kit.resource(storeResource(config, skills, deps.openStore));
  const metrics = createTaskAgentMetrics(kit.metrics, {
    workersBusy: () => workers.value?.busy ?? 0,
    workers: () => config.TASK_AGENT_WORKERS,
    llmUp: () => monitor.status.state === 'up',
    stats: () => workers.value?.stats,
  });
  const workers = kit.resource(
    workersResource(store, monitor, { config, skills, llm, model, logger: kit.logger, metrics, now }),
  );
  const rt: TaskAgentRuntime = {
    config,
    version: VERSION,
    store,
    workers,
    skills,
    llm,
    llmStatus: () => monitor.status,
    model,
    readiness: kit.readiness,
    gate: kit.gate,
    metrics,
    now,
    newSessionId: () => randomUUID(),
    startedAt: now(),
  };
  const api = [...taskRoutes(rt), ...scheduleRoutes(rt), ...chatRoutes(rt)];
  const app = kit.mount([...infoRoutes(rt), ...api.map((r): AnyRoute => ({ ...r, requiresReady: true }))]);
  return {
    kit: app,
    skills,
    monitor,
    get store(): TaskStore {
      return store.require();
    },
    start: async () => {
      app.start();
      await app.settled();
    },
    close: () => app.close(),
  };
}
