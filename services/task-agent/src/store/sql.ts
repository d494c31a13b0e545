import {
  FINAL_STATUSES,
  LOG_LEVELS,
  RUN_STATUSES,
  TASK_STATUSES,
  type ChatMessage,
  type Run,
  type Schedule,
  type SkillEntry,
  type Task,
  type TaskLog,
  type TaskStats,
  type TaskStatus,
} from '../domain/types.js';

/**
 * What both stores share: the row → record mapping (so SQLite and PostgreSQL answer the same
 * objects, key for key), the messages they write into task logs, and the column constraints.
 *
 * The drivers hand rows over differently: SQLite gives numbers, ISO strings and 0/1; `pg` gives
 * bigint columns as strings, timestamptz as `Date` and booleans. The mappers accept both, and every
 * record leaves as JS numbers, ISO 8601 UTC strings with milliseconds (`2026-11-22T10:00:00.123Z`)
 * and booleans.
 *
 * This file and the two stores import nothing from the kit: child processes in the tests (and the
 * task proxy) load them on their own.
 */

/** A row as a driver returns it. */
export type Row = Record<string, unknown>;

export function num(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') {
    const n = Number(value);
    if (Number.isSafeInteger(n)) return n;
  }
  throw new TypeError(`expected an integer column, got ${describe(value)}`);
}

export function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : num(value);
}

export function iso(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return value;
  throw new TypeError(`expected a timestamp column, got ${describe(value)}`);
}

export function isoOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : iso(value);
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  throw new TypeError(`expected a text column, got ${describe(value)}`);
}

function textOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : text(value);
}

function bool(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  throw new TypeError(`expected a boolean column, got ${describe(value)}`);
}

function oneOf<T extends string>(allowed: readonly T[], value: unknown): T {
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new TypeError(`unexpected value ${describe(value)}`);
  return found;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return `string "${value.slice(0, 40)}"`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}

// Text as both stores keep it --------------------------------------------------------------------

/**
 * Free text as both stores write it: without NUL characters (U+0000), which PostgreSQL's `text`
 * can not hold (it fails the whole write). Requests carrying one are refused at the edge; what is
 * stripped here is text produced on the way (an LLM's answer, a skill's output or error), so a run
 * can always be finished and a chat turn kept. SQLite would keep the NUL: stripping it there too
 * keeps the two stores' records identical.
 */
export function storable(value: string): string {
  return value.includes('\u0000') ? value.replaceAll('\u0000', '') : value;
}

export function storableOrNull(value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : storable(value);
}

// Records -------------------------------------------------------------------------------------

export function taskFromRow(r: Row): Task {
  return {
    id: num(r['id']),
    title: text(r['title']),
    description: text(r['description']),
    priority: num(r['priority']),
    status: oneOf(TASK_STATUSES, r['status']),
    result: textOrNull(r['result']),
    attempts: num(r['attempts']),
    schedule_id: numOrNull(r['schedule_id']),
    created_at: iso(r['created_at']),
    updated_at: iso(r['updated_at']),
  };
}

export function runFromRow(r: Row): Run {
  return {
    id: num(r['id']),
    task_id: num(r['task_id']),
    status: oneOf(RUN_STATUSES, r['status']),
    worker: text(r['worker']),
    steps: num(r['steps']),
    started_at: iso(r['started_at']),
    finished_at: isoOrNull(r['finished_at']),
    output: textOrNull(r['output']),
    error: textOrNull(r['error']),
  };
}

export function logFromRow(r: Row): TaskLog {
  return {
    id: num(r['id']),
    task_id: num(r['task_id']),
    run_id: numOrNull(r['run_id']),
    level: oneOf(LOG_LEVELS, r['level']),
    message: text(r['message']),
    created_at: iso(r['created_at']),
  };
}

export function scheduleFromRow(r: Row): Schedule {
  return {
    id: num(r['id']),
    name: text(r['name']),
    cron: text(r['cron']),
    timezone: text(r['timezone']),
    title: text(r['title']),
    description: text(r['description']),
    priority: num(r['priority']),
    enabled: bool(r['enabled']),
    next_run_at: isoOrNull(r['next_run_at']),
    last_run_at: isoOrNull(r['last_run_at']),
    last_task_id: numOrNull(r['last_task_id']),
    created_at: iso(r['created_at']),
    updated_at: iso(r['updated_at']),
  };
}

export function skillFromRow(r: Row): SkillEntry {
  const schema: unknown = JSON.parse(text(r['input_schema']));
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new TypeError('a stored skill input_schema is not a JSON object');
  }
  return {
    name: text(r['name']),
    description: text(r['description']),
    input_schema: schema as Record<string, unknown>,
    service: textOrNull(r['service']),
  };
}

export function chatFromRow(r: Row): ChatMessage {
  return {
    role: oneOf(['user', 'assistant'] as const, r['role']),
    content: text(r['content']),
    created_at: iso(r['created_at']),
  };
}

export function statsFromCounts(rows: readonly Row[]): TaskStats {
  const counts: Record<TaskStatus, number> = { pending: 0, running: 0, done: 0, failed: 0, cancelled: 0 };
  for (const r of rows) counts[oneOf(TASK_STATUSES, r['status'])] = num(r['n']);
  const total = TASK_STATUSES.reduce((sum, s) => sum + counts[s], 0);
  return { total, ...counts };
}

// Column constraints (the same CHECKs in both schemas) -----------------------------------------

const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');
export const TASK_STATUS_CHECK = `status IN (${quoted(TASK_STATUSES)})`;
export const RUN_STATUS_CHECK = `status IN (${quoted(RUN_STATUSES)})`;
export const LOG_LEVEL_CHECK = `level IN (${quoted(LOG_LEVELS)})`;
export const CHAT_ROLE_CHECK = `role IN ('user', 'assistant')`;
/** A task that is finished: done, failed or cancelled (the retention sweep's filter). */
export const FINAL_STATUS_FILTER = `status IN (${quoted([...FINAL_STATUSES])})`;

// What the stores write into task logs and runs -----------------------------------------------

export const messages = {
  runStarted: (runId: number, worker: string): string => `run ${runId} started by ${worker}`,
  cancelled: (by: string): string => `cancelled by ${by}`,
  createdBySchedule: (name: string): string => `created by schedule ${name}`,
  /** The interrupted run's `error`. */
  leaseExpired: (leaseExpiresAt: string, worker: string): string =>
    `lease expired at ${leaseExpiresAt}: worker ${worker} stopped without finishing`,
  /** The error log of a recovered run. */
  recovered: (
    runId: number,
    leaseError: string,
    action: 'retried' | 'failed',
    attempts: number,
    maxAttempts: number,
  ): string =>
    action === 'retried'
      ? `run ${runId} failed: ${leaseError}; the task is pending again (${attempts} of ${maxAttempts} attempts used)`
      : `run ${runId} failed: ${leaseError}; the task failed (${attempts} of ${maxAttempts} attempts used)`,
  /** The warn log of a run whose task was cancelled while its worker was gone. */
  recoveredCancelled: (runId: number, leaseError: string): string =>
    `run ${runId} ended cancelled: ${leaseError}; the task had been cancelled`,
  /** The `error` of a run handed back before it started (`releaseRun`). */
  notStarted: (reason: string): string => `not started: ${reason}`,
  /** Its warn log. */
  released: (runId: number, reason: string, cancelled: boolean): string =>
    cancelled
      ? `run ${runId} handed back before it started (${reason}); the task had been cancelled`
      : `run ${runId} handed back before it started (${reason}); the task is pending again`,
  /** A run still going when its cancelled task was queued again (its worker had not stopped yet). */
  supersededRun: 'the task was cancelled and queued again before this run stopped',
};

/** The lease deadline of a run claimed or renewed at `now`. */
export function leaseUntil(now: Date, leaseMs: number): string {
  return new Date(now.getTime() + leaseMs).toISOString();
}

/** Where `task_id` does not exist (a log or a chat can not hang off nothing). */
export class UnknownTaskError extends Error {
  constructor(readonly taskId: number) {
    super(`task ${taskId} does not exist`);
    this.name = 'UnknownTaskError';
  }
}
