/**
 * The task agent's records, as stored and as every API answers them (snake_case, the spec's field
 * names). The task agent's HTTP API and the task proxy (online through the agent, offline from the
 * store) serialize the same objects, so an answer reads the same whichever path produced it.
 */

/** The status a task is stored with: the first name of each of the spec's status groups. */
export const TASK_STATUSES = ['pending', 'running', 'done', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** The spec's status groups: names a consumer treats alike, by the group's stored name. */
export const STATUS_GROUPS: Readonly<Record<TaskStatus, readonly string[]>> = {
  pending: ['pending', 'queued', 'waiting'],
  running: ['running', 'in_progress', 'active'],
  done: ['done', 'completed', 'success'],
  failed: ['failed', 'error'],
  cancelled: ['cancelled', 'canceled'],
};

/** Every accepted status name, for filters (`?status=in_progress` means the running group). */
export const STATUS_NAMES: readonly string[] = TASK_STATUSES.flatMap((s) => STATUS_GROUPS[s]);

/** The group a status name belongs to (case-insensitive), or undefined. */
export function statusGroup(name: string): TaskStatus | undefined {
  const n = name.trim().toLowerCase();
  return TASK_STATUSES.find((s) => STATUS_GROUPS[s].includes(n));
}

/** Finished tasks: a new run may start them again. */
export const FINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['done', 'failed', 'cancelled']);

/** Priorities: 1 (lowest) to 10 (most urgent); higher runs first, then older first. */
export const PRIORITY_MIN = 1;
export const PRIORITY_MAX = 10;
export const PRIORITY_DEFAULT = 5;
/** Words the proxy's form accepts for `priority`. */
export const PRIORITY_WORDS: Readonly<Record<string, number>> = { low: 2, normal: 5, high: 8, urgent: 10 };

export interface Task {
  readonly id: number;
  readonly title: string;
  readonly description: string;
  readonly priority: number;
  readonly status: TaskStatus;
  /** The last successful run's answer; null until one finishes. */
  readonly result: string | null;
  /** Runs started so far (a lease that expired counts). */
  readonly attempts: number;
  /** The schedule that created it, if any. */
  readonly schedule_id: number | null;
  /** ISO 8601 UTC with milliseconds. */
  readonly created_at: string;
  readonly updated_at: string;
}

export const RUN_STATUSES = ['running', 'done', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface Run {
  readonly id: number;
  readonly task_id: number;
  readonly status: RunStatus;
  /** The worker that ran it (`<hostname>/<pid>/<n>`). */
  readonly worker: string;
  /** Plan-and-act steps taken. */
  readonly steps: number;
  readonly started_at: string;
  readonly finished_at: string | null;
  readonly output: string | null;
  readonly error: string | null;
}

export const LOG_LEVELS = ['info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface TaskLog {
  readonly id: number;
  readonly task_id: number;
  readonly run_id: number | null;
  readonly level: LogLevel;
  readonly message: string;
  readonly created_at: string;
}

export interface Schedule {
  readonly id: number;
  readonly name: string;
  /** Five fields (minute hour day month weekday), or six with seconds first. */
  readonly cron: string;
  /** IANA time zone the expression is read in. */
  readonly timezone: string;
  /** The task each firing creates. */
  readonly title: string;
  readonly description: string;
  readonly priority: number;
  readonly enabled: boolean;
  /** Null when disabled or when the expression never fires again. */
  readonly next_run_at: string | null;
  readonly last_run_at: string | null;
  /** The task its last firing created. */
  readonly last_task_id: number | null;
  readonly created_at: string;
  readonly updated_at: string;
}

/** A skill as listed (`get_skills`): what the LLM sees when it plans. */
export interface SkillEntry {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of its input (from its zod schema). */
  readonly input_schema: Record<string, unknown>;
  /** The suite service it calls, or null when it runs in the agent. */
  readonly service: string | null;
}

/** `get_stats`: a count per status group and the total. */
export interface TaskStats {
  readonly total: number;
  readonly pending: number;
  readonly running: number;
  readonly done: number;
  readonly failed: number;
  readonly cancelled: number;
}

export interface ChatMessage {
  readonly role: 'user' | 'assistant';
  readonly content: string;
  readonly created_at: string;
}
