import type { Logger, Resource, ResourceSpec } from '@clinicalsuite/kit';
import type { ChatBackend, LlmMonitor } from '@clinicalsuite/kit/llm';
import type { TaskAgentConfig } from '../config.js';
import { executeRun } from '../domain/plan-act.js';
import type { AnySkill } from '../domain/skills.js';
import type { TaskAgentMetrics } from '../metrics.js';
import type { TaskStore } from '../store/types.js';
import { nextRun } from './cron.js';
import { WorkerPool } from './workers.js';

/** What the configured worker pool runs tasks with. */
export interface WorkerPoolDeps {
  readonly config: TaskAgentConfig;
  readonly skills: readonly AnySkill[];
  readonly llm: ChatBackend;
  /** The model name sent to the LLM. */
  readonly model: () => string;
  readonly logger: Logger;
  readonly metrics: TaskAgentMetrics;
  /** Epoch ms. */
  readonly now: () => number;
}

/**
 * This replica's workers as a kit resource: once the store is open, the LLM monitor starts and the
 * workers claim tasks while it says the LLM answers with a known model; on close they stop
 * (interrupted runs go back to the queue) and the monitor with them.
 */
export function workersResource(
  store: Resource<TaskStore>,
  monitor: LlmMonitor,
  deps: WorkerPoolDeps,
): ResourceSpec<WorkerPool> {
  return {
    name: 'the workers',
    open: async ({ untilClosed }) => {
      const pool = configuredWorkerPool(await untilClosed(store.opened()), monitor, deps);
      monitor.start();
      pool.start();
      return pool;
    },
    close: async (pool) => {
      monitor.stop();
      await pool.stop();
    },
    describe: () => ({
      fields: {
        store: store.value?.kind,
        skills: deps.skills.map((s) => s.name),
        workers: deps.config.TASK_AGENT_WORKERS,
      },
    }),
  };
}

/**
 * The workers of the configuration over the open store: each run is the bounded plan-and-act loop
 * (domain/plan-act.ts) over the skills, with the configured limits, counted in the metrics.
 */
export function configuredWorkerPool(
  store: TaskStore,
  monitor: LlmMonitor,
  deps: WorkerPoolDeps,
): WorkerPool {
  const { config, metrics: m, now } = deps;
  return new WorkerPool({
    store,
    workers: config.TASK_AGENT_WORKERS,
    leaseMs: config.TASK_AGENT_LEASE_MS,
    pollMs: config.TASK_AGENT_POLL_MS,
    tickMs: config.TASK_AGENT_TICK_MS,
    runTimeoutMs: config.TASK_AGENT_RUN_TIMEOUT_S * 1000,
    maxAttempts: config.TASK_AGENT_MAX_ATTEMPTS,
    retentionMs: config.TASK_AGENT_RETENTION_DAYS * 86_400_000,
    nextRun,
    canClaim: () => monitor.status.state === 'up' && monitor.status.model !== null,
    logger: deps.logger,
    metrics: m,
    now: () => new Date(now()),
    execute: (task, signal, log) =>
      executeRun({
        title: task.title,
        description: task.description,
        skills: deps.skills,
        backend: deps.llm,
        model: deps.model(),
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
}
