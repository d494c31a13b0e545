import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConfigError,
  Readiness,
  ServiceUnavailableError,
  serviceAuth,
  buildApp,
  createLogger,
  type AnyRoute,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, LlmMonitor } from '@clinicalsuite/kit/llm';
import { nextRun } from './adapters/cron.js';
import { buildSkills } from './adapters/skills.js';
import { WorkerPool } from './adapters/workers.js';
import type { TaskAgentConfig } from './config.js';
import { executeRun } from './domain/plan-act.js';
import { skillEntry, validateSkills, type AnySkill } from './domain/skills.js';
import { createTaskAgentMetrics } from './metrics.js';
import { chatRoutes } from './routes/chat.js';
import { infoRoutes } from './routes/info.js';
import type { TaskAgentRuntime } from './routes/runtime.js';
import { scheduleRoutes } from './routes/schedules.js';
import { taskRoutes } from './routes/tasks.js';
import { openTaskStore } from './store/open.js';
import type { TaskStore } from './store/types.js';

export const SERVICE = 'task_agent';
export const VERSION = '0.1.0';

/** Longest wait between two attempts to open the store. */
const MAX_OPEN_BACKOFF_MS = 10_000;

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
  /** The open store (throws before `start()` opened it). */
  readonly store: TaskStore;
  readonly pool: WorkerPool;
  /**
   * Opens the store (retrying with backoff while the database is unreachable: /health says why),
   * publishes the skill catalogue, starts the LLM monitor, the workers and the tick. Resolves when
   * the store is open.
   */
  start(): Promise<void>;
  /** Stops the workers (interrupted runs go back to the queue) and closes the store. */
  close(): Promise<void>;
}

export function buildTaskAgentApp(deps: TaskAgentDeps): TaskAgentService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'task-agent', level: config.LOG_LEVEL });
  const now = deps.now ?? (() => Date.now());
  const openStore =
    deps.openStore ??
    (() =>
      openTaskStore({
        sqlitePath: config.sqlitePath,
        ...(config.DATABASE_URL === undefined ? {} : { databaseUrl: config.DATABASE_URL }),
      }));
  const readiness = new Readiness('starting: the store is not open yet');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const llm = new LlmClient({
    baseUrl: config.LLM_URL,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.TASK_AGENT_LLM_TIMEOUT_MS,
    retries: config.TASK_AGENT_LLM_RETRIES,
    backoffMs: config.TASK_AGENT_LLM_BACKOFF_MS,
  });
  // The LLM's state does not decide readiness (tasks, logs and schedules work without it); it
  // decides whether workers claim tasks. The monitor gets a readiness of its own.
  const llmReadiness = new Readiness('the LLM has not been checked yet');
  const monitor = new LlmMonitor({
    client: llm,
    readiness: llmReadiness,
    logger,
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
  });
  const problems = validateSkills(skills);
  if (problems.length > 0) throw new ConfigError(problems);

  let store: TaskStore | undefined;
  const storeView = new Proxy({} as TaskStore, {
    get(_target, key) {
      if (store === undefined)
        throw new ServiceUnavailableError(`Service not ready: ${readiness.reason ?? 'starting'}`);
      const value: unknown = Reflect.get(store, key);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(store) : value;
    },
  });
  // Set while buildApp builds the routes (the pool needs the kit's metrics registry).
  let builtPool: WorkerPool | undefined;
  const poolIfBuilt = (): WorkerPool | undefined => builtPool;
  const auth = serviceAuth(config, {
    scope: 'task_agent',
    tokenEnv: 'TASK_AGENT_API_TOKEN',
    token: config.TASK_AGENT_API_TOKEN,
  });
  const startedAt = now();
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite task agent',
    version: VERSION,
    description:
      'Runs tasks with an LLM in a bounded plan-and-act loop over skills (medical code search, the ' +
      'reasoning engine, summaries, service checks), records every run and log, fires cron schedules, ' +
      'and chats. SQLite by default, PostgreSQL for several replicas; the task proxy is its client.',
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics: kitMetrics }) => {
      const m = createTaskAgentMetrics(kitMetrics, {
        workersBusy: () => poolIfBuilt()?.busy ?? 0,
        workers: () => config.TASK_AGENT_WORKERS,
        llmUp: () => monitor.status.state === 'up',
        stats: () => poolIfBuilt()?.stats,
      });
      const pool = new WorkerPool({
        store: storeView,
        workers: config.TASK_AGENT_WORKERS,
        leaseMs: config.TASK_AGENT_LEASE_MS,
        pollMs: config.TASK_AGENT_POLL_MS,
        tickMs: config.TASK_AGENT_TICK_MS,
        runTimeoutMs: config.TASK_AGENT_RUN_TIMEOUT_S * 1000,
        maxAttempts: config.TASK_AGENT_MAX_ATTEMPTS,
        retentionMs: config.TASK_AGENT_RETENTION_DAYS * 86_400_000,
        nextRun,
        canClaim: () => monitor.status.state === 'up' && monitor.status.model !== null,
        logger,
        metrics: m,
        now: () => new Date(now()),
        execute: (task, signal, log) =>
          executeRun({
            title: task.title,
            description: task.description,
            skills,
            backend: llm,
            model: model(),
            limits: {
              maxSteps: config.TASK_AGENT_MAX_STEPS,
              stepMaxTokens: config.TASK_AGENT_STEP_MAX_TOKENS,
              temperature: config.TASK_AGENT_TEMPERATURE,
              ...(config.TASK_AGENT_SEED === undefined ? {} : { seed: config.TASK_AGENT_SEED }),
              observationChars: config.TASK_AGENT_OBSERVATION_CHARS,
              thoughtChars: config.TASK_AGENT_THOUGHT_MAX_CHARS,
              answerChars: config.TASK_AGENT_ANSWER_MAX_CHARS,
            },
            signal,
            now,
            events: {
              log,
              skillCalled: (skill, outcome, seconds) => {
                m.skillCalls.inc({ skill, outcome });
                if (outcome !== 'invalid_input') m.skillDuration.observe({ skill }, seconds);
              },
              stepDone: (outcome) => m.steps.inc({ outcome }),
            },
          }),
      });
      builtPool = pool;
      const rt: TaskAgentRuntime = {
        config,
        version: VERSION,
        store: storeView,
        storeKind: () => store?.kind ?? (config.DATABASE_URL === undefined ? 'sqlite' : 'postgresql'),
        pool,
        skills,
        llm,
        llmStatus: () => monitor.status,
        model,
        readiness,
        gate,
        metrics: m,
        now,
        newSessionId: () => randomUUID(),
        startedAt,
      };
      const apiRoutes = [...taskRoutes(rt), ...scheduleRoutes(rt), ...chatRoutes(rt)].map((r): AnyRoute => ({
        ...r,
        requiresReady: true,
      }));
      return [...infoRoutes(rt), ...apiRoutes];
    },
  });
  const built = poolIfBuilt();
  if (built === undefined) throw new Error('the routes were not built');
  const pool: WorkerPool = built;
  // close() may begin at any await of open(): open() looks after each one and stops there, and
  // close() waits for it to settle before stopping what it started.
  const closing = new AbortController();
  const isClosed = (): boolean => closing.signal.aborted;
  const closed = new Promise<undefined>((resolve) =>
    closing.signal.addEventListener('abort', () => resolve(undefined), { once: true }),
  );
  let starting: Promise<void> | undefined;

  async function open(): Promise<void> {
    for (let attempt = 1; !isClosed(); attempt++) {
      try {
        const pending = openStore();
        const opened = await Promise.race([pending, closed]);
        if (opened === undefined || isClosed()) {
          // Closed while opening: close the store when (if) it opens, without holding close() up.
          void pending.then((s) => s.close()).catch(() => undefined);
          return;
        }
        store = opened;
        break;
      } catch (error) {
        if (isClosed()) return;
        const why = error instanceof Error ? error.message : String(error);
        readiness.setNotReady(`the store cannot be opened: ${why}`);
        logger.error({ err: error, attempt }, 'opening the store failed; retrying');
        // The wait ends at once when close() begins.
        await sleep(Math.min(MAX_OPEN_BACKOFF_MS, 250 * 2 ** attempt), undefined, {
          signal: closing.signal,
        }).catch(() => undefined);
      }
    }
    if (store === undefined || isClosed()) return;
    await store.saveSkills(skills.map(skillEntry));
    if (isClosed()) return;
    monitor.start();
    pool.start();
    readiness.setReady();
    logger.info(
      { store: store.kind, skills: skills.map((s) => s.name), workers: config.TASK_AGENT_WORKERS },
      'task agent ready',
    );
  }

  return {
    kit,
    skills,
    monitor,
    get store(): TaskStore {
      if (store === undefined) throw new Error('the store is not open yet');
      return store;
    },
    pool,
    start: () => (starting ??= open()),
    close: async () => {
      closing.abort();
      readiness.setShuttingDown();
      // Whatever open() had reached, it started nothing after this point.
      await starting?.catch(() => undefined);
      monitor.stop();
      await pool.stop();
      await store?.close();
    },
  };
}
