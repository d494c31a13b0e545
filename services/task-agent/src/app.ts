import { randomUUID } from 'node:crypto';
import { createKit, createLogger, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { LlmMonitor } from '@clinicalsuite/kit/llm';
import { plannerLlm } from './adapters/llm.js';
import { configuredSkills } from './adapters/skills.js';
import { storeResource } from './adapters/store.js';
import { workersResource } from './adapters/worker-pool.js';
import type { TaskAgentConfig } from './config.js';
import type { AnySkill } from './domain/skills.js';
import { createTaskAgentMetrics, registerTaskAgentGauges } from './metrics.js';
import { chatRoutes } from './routes/chat.js';
import { API_INFO, infoRoutes } from './routes/info.js';
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
  /** Opens the store, then the workers (as `serve()` does); resolves once both are open or gave up. */
  start(): Promise<void>;
  /** Stops the workers (interrupted runs go back to the queue) and closes the store. */
  close(): Promise<void>;
}

export function buildTaskAgentApp({ config, ...deps }: TaskAgentDeps): TaskAgentService {
  const now = deps.now ?? (() => Date.now());
  const kit = createKit({
    ...API_INFO,
    service: SERVICE,
    version: VERSION,
    config,
    logger: deps.logger ?? createLogger({ service: 'task-agent', level: config.LOG_LEVEL }),
    gpuStatusPath: '/gpu_status',
    auth: serviceAuth(config, {
      scope: 'task_agent',
      tokenEnv: 'TASK_AGENT_API_TOKEN',
      token: config.TASK_AGENT_API_TOKEN,
    }),
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const metrics = createTaskAgentMetrics(kit.metrics);
  // The LLM's state does not decide readiness (tasks, logs and schedules work without it); it
  // decides whether workers claim tasks (the workers start and stop the monitor).
  const { llm, monitor, model } = plannerLlm(config, kit.metrics, { logger: kit.logger, now });
  const skills = configuredSkills(config, { llm, model, metrics: kit.metrics });
  const store = kit.resource(storeResource(config, skills, deps.openStore));
  const workers = kit.resource(
    workersResource(store, monitor, { config, skills, llm, model, logger: kit.logger, metrics, now }),
  );
  registerTaskAgentGauges(kit.metrics, { workers, workerCount: config.TASK_AGENT_WORKERS, monitor });
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
  const app = kit.mount([...infoRoutes(rt), ...taskRoutes(rt), ...scheduleRoutes(rt), ...chatRoutes(rt)]);
  return {
    kit: app,
    skills,
    monitor,
    get store(): TaskStore {
      return store.require();
    },
    start: () => app.open(),
    close: () => app.close(),
  };
}
