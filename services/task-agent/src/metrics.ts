import type { KitMetrics } from '@clinicalsuite/kit';
import { registerLlmUpGauge, type LlmStatus } from '@clinicalsuite/kit/llm';
import { Counter, Gauge, Histogram } from 'prom-client';
import { TASK_STATUSES, type TaskStats } from './domain/types.js';

/**
 * The task agent's own metrics (`task_agent_` prefix). Labels never hold ids, titles or text:
 * skill names come from the configured catalogue, statuses and outcomes from fixed sets.
 */

export interface TaskAgentMetrics {
  readonly tasksCreated: Counter<'source'>;
  readonly runsStarted: Counter;
  readonly runsFinished: Counter<'status'>;
  readonly runDuration: Histogram<'status'>;
  readonly runSteps: Histogram;
  readonly steps: Counter<'outcome'>;
  readonly skillCalls: Counter<'skill' | 'outcome'>;
  readonly skillDuration: Histogram<'skill'>;
  readonly leasesRecovered: Counter<'action'>;
  readonly schedulesFired: Counter;
  readonly chatTurns: Counter<'outcome'>;
  readonly storeErrors: Counter<'operation'>;
}

const SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** What the agent counts and times: tasks, runs, steps, skill calls, schedules, chats. */
export function createTaskAgentMetrics(kit: KitMetrics): TaskAgentMetrics {
  const registers = [kit.registry];
  const p = kit.prefix;
  return {
    tasksCreated: new Counter({
      name: `${p}tasks_created_total`,
      help: 'Tasks created, by source (api, schedule).',
      labelNames: ['source'] as const,
      registers,
    }),
    runsStarted: new Counter({
      name: `${p}runs_started_total`,
      help: 'Runs started by this replica.',
      registers,
    }),
    runsFinished: new Counter({
      name: `${p}runs_finished_total`,
      help: 'Runs ended by this replica, by status (done, failed, cancelled, lost).',
      labelNames: ['status'] as const,
      registers,
    }),
    runDuration: new Histogram({
      name: `${p}run_duration_seconds`,
      help: 'Time from a run’s claim to its end, by status.',
      labelNames: ['status'] as const,
      buckets: SECONDS,
      registers,
    }),
    runSteps: new Histogram({
      name: `${p}run_steps`,
      help: 'Plan-and-act steps per finished run.',
      buckets: [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50],
      registers,
    }),
    steps: new Counter({
      name: `${p}steps_total`,
      help: 'LLM plan steps, by outcome (action, finish, unparsable).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    skillCalls: new Counter({
      name: `${p}skill_calls_total`,
      help: 'Skill calls, by skill and outcome (ok, error, invalid_input).',
      labelNames: ['skill', 'outcome'] as const,
      registers,
    }),
    skillDuration: new Histogram({
      name: `${p}skill_duration_seconds`,
      help: 'Time a skill took, by skill.',
      labelNames: ['skill'] as const,
      buckets: SECONDS,
      registers,
    }),
    leasesRecovered: new Counter({
      name: `${p}leases_recovered_total`,
      help: 'Runs whose worker stopped without finishing, by what became of the task (retried, failed).',
      labelNames: ['action'] as const,
      registers,
    }),
    schedulesFired: new Counter({
      name: `${p}schedules_fired_total`,
      help: 'Schedule firings (each creates a task).',
      registers,
    }),
    chatTurns: new Counter({
      name: `${p}chat_turns_total`,
      help: 'Chat messages answered or failed, by outcome (ok, error).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    storeErrors: new Counter({
      name: `${p}store_errors_total`,
      help: 'Background store operations that failed, by operation (claim, renew, finish, release, tick).',
      labelNames: ['operation'] as const,
      registers,
    }),
  };
}

/**
 * What the agent holds, read at each scrape: its workers (busy, and of `workerCount`), whether the LLM
 * answers, and the tasks per status (the last counts the workers read from the store, every tick).
 */
export function registerTaskAgentGauges(
  kit: KitMetrics,
  parts: {
    workers: { readonly value: { readonly busy: number; readonly stats: TaskStats | undefined } | undefined };
    workerCount: number;
    monitor: { readonly status: LlmStatus };
  },
): void {
  const registers = [kit.registry];
  const p = kit.prefix;
  new Gauge({
    name: `${p}workers_busy`,
    help: 'Workers of this replica running a task.',
    registers,
    collect() {
      this.set(parts.workers.value?.busy ?? 0);
    },
  });
  new Gauge({
    name: `${p}workers`,
    help: 'Workers of this replica (TASK_AGENT_WORKERS).',
    registers,
    collect() {
      this.set(parts.workerCount);
    },
  });
  registerLlmUpGauge(kit, parts.monitor);
  new Gauge({
    name: `${p}tasks`,
    help: 'Tasks in the store by status group (all replicas; read every tick).',
    labelNames: ['status'] as const,
    registers,
    collect() {
      const stats = parts.workers.value?.stats;
      if (stats === undefined) return;
      for (const status of TASK_STATUSES) this.set({ status }, stats[status]);
    },
  });
}
