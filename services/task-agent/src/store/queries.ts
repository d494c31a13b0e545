import { ConflictError, NotFoundError, ValidationError } from '@clinicalsuite/kit';
import {
  PRIORITY_DEFAULT,
  PRIORITY_MAX,
  PRIORITY_MIN,
  PRIORITY_WORDS,
  STATUS_NAMES,
  statusGroup,
  type Run,
  type Schedule,
  type SkillEntry,
  type Task,
  type TaskLog,
  type TaskStats,
  type TaskStatus,
} from '../domain/types.js';
import type { TaskStore } from './types.js';

/**
 * The read operations' answers, built in one place: the agent's routes serve them online and the
 * task proxy serves them from the store when the agent is offline, so both paths give identical
 * bodies and reject the same bad input with the same error.
 *
 * Inputs are taken as they arrive (query string values, form fields: strings, numbers, missing,
 * even arrays) and validated here. A bad value is a 422 `ValidationError` whose `loc` names the
 * field where it came from (`query` for the agent, `body` for the proxy's form, `path` for an id in
 * the URL); an unknown task id is a 404 `NotFoundError`. A `limit` above the maximum is lowered to
 * it; below 1 or not a whole number is refused.
 */

export const TASKS_LIMIT_DEFAULT = 50;
export const TASKS_LIMIT_MAX = 500;
export const LOGS_LIMIT_DEFAULT = 100;
export const LOGS_LIMIT_MAX = 1000;
export const RUNS_LIMIT_DEFAULT = 50;
export const RUNS_LIMIT_MAX = 500;
/** A task's detail: its newest logs and runs, up to these counts. */
export const DETAIL_LOGS_LIMIT = 200;
export const DETAIL_RUNS_LIMIT = 50;

export interface LimitBounds {
  readonly default: number;
  readonly max: number;
}
export const TASKS_LIMIT: LimitBounds = { default: TASKS_LIMIT_DEFAULT, max: TASKS_LIMIT_MAX };
export const LOGS_LIMIT: LimitBounds = { default: LOGS_LIMIT_DEFAULT, max: LOGS_LIMIT_MAX };
export const RUNS_LIMIT: LimitBounds = { default: RUNS_LIMIT_DEFAULT, max: RUNS_LIMIT_MAX };

/** Where the request carried a value: the agent's query string, the proxy's form, the URL path. */
export type InputSource = 'query' | 'body' | 'path';
/** A field's location in a 422: `['query', 'limit']`. */
export type FieldLoc = readonly [InputSource, string];

export interface TaskListBody {
  readonly tasks: Task[];
}
export interface TaskDetailBody {
  readonly task: Task;
  readonly logs: TaskLog[];
  readonly runs: Run[];
}
export interface LogsBody {
  readonly logs: TaskLog[];
}
export interface RunsBody {
  readonly runs: Run[];
}
export interface StatsBody {
  readonly stats: TaskStats;
}
export interface SkillsBody {
  readonly skills: SkillEntry[];
}
export interface SchedulesBody {
  readonly schedules: Schedule[];
}

/** What a list operation accepts, as it arrived. */
export interface ListTasksInput {
  readonly status?: unknown;
  readonly limit?: unknown;
}
export interface TaskFilterInput {
  readonly taskId?: unknown;
  readonly limit?: unknown;
}

// Bodies ----------------------------------------------------------------------------------------

/** `{tasks}`, newest first; `status` is any name of any group (`in_progress` lists running tasks). */
export async function listTasksBody(
  store: TaskStore,
  input: ListTasksInput = {},
  source: InputSource = 'query',
): Promise<TaskListBody> {
  const status = parseStatusFilter(input.status, [source, 'status']);
  const limit = parseLimit(input.limit, TASKS_LIMIT, [source, 'limit']);
  return { tasks: await store.listTasks(status === undefined ? { limit } : { status, limit }) };
}

/** `{task, logs, runs}`: the task, its newest logs and its newest runs; 404 for an unknown id. */
export async function taskDetailBody(
  store: TaskStore,
  id: unknown,
  loc: FieldLoc = ['path', 'id'],
): Promise<TaskDetailBody> {
  const task = await existingTask(store, parseTaskId(id, loc));
  const [logs, runs] = await Promise.all([
    store.listLogs({ taskId: task.id, limit: DETAIL_LOGS_LIMIT }),
    store.listRuns({ taskId: task.id, limit: DETAIL_RUNS_LIMIT }),
  ]);
  return { task, logs, runs };
}

/**
 * Cancels a pending or running task (`{cancelled: true, task, previous}`); 404 for an unknown task,
 * 409 for one already done, failed or cancelled. `by` is written in the task's log. The agent's
 * route and the proxy's offline path both cancel through here.
 */
export async function cancelTaskBody(
  store: TaskStore,
  id: number,
  by: string,
  now: Date,
): Promise<{ cancelled: true; task: Task; previous: TaskStatus }> {
  const result = await store.cancelTask(id, by, now);
  if (result.task === undefined || result.previous === undefined)
    throw new NotFoundError(`Task ${id} not found`);
  if (!result.cancelled) {
    throw new ConflictError(
      `Task ${id} is already ${result.task.status}: only pending or running tasks can be cancelled`,
    );
  }
  return { cancelled: true, task: result.task, previous: result.previous };
}

/**
 * Deletes a finished task with its runs and logs: 404 for an unknown id, 409 while it is pending or
 * running. The agent's route and the proxy's offline path both delete through here.
 */
export async function deleteTaskBody(store: TaskStore, id: number): Promise<{ deleted: true; id: number }> {
  const result = await store.deleteTask(id);
  if (result === 'not_found') throw new NotFoundError(`Task ${id} not found`);
  if (result === 'active') {
    throw new ConflictError(`Task ${id} is pending or running: cancel it before deleting it`);
  }
  return { deleted: true, id };
}

/** `{logs}`, newest first, of one task (404 when it does not exist) or of all. */
export async function logsBody(
  store: TaskStore,
  input: TaskFilterInput = {},
  source: InputSource = 'query',
): Promise<LogsBody> {
  const taskId = parseOptionalTaskId(input.taskId, [source, 'task_id']);
  const limit = parseLimit(input.limit, LOGS_LIMIT, [source, 'limit']);
  if (taskId === undefined) return { logs: await store.listLogs({ limit }) };
  await existingTask(store, taskId);
  return { logs: await store.listLogs({ taskId, limit }) };
}

/** `{runs}`, newest first, of one task (404 when it does not exist) or of all. */
export async function runsBody(
  store: TaskStore,
  input: TaskFilterInput = {},
  source: InputSource = 'query',
): Promise<RunsBody> {
  const taskId = parseOptionalTaskId(input.taskId, [source, 'task_id']);
  const limit = parseLimit(input.limit, RUNS_LIMIT, [source, 'limit']);
  if (taskId === undefined) return { runs: await store.listRuns({ limit }) };
  await existingTask(store, taskId);
  return { runs: await store.listRuns({ taskId, limit }) };
}

export async function statsBody(store: TaskStore): Promise<StatsBody> {
  return { stats: await store.stats() };
}

export async function skillsBody(store: TaskStore): Promise<SkillsBody> {
  return { skills: await store.listSkills() };
}

export async function schedulesBody(store: TaskStore): Promise<SchedulesBody> {
  return { schedules: await store.listSchedules() };
}

// Parsers ---------------------------------------------------------------------------------------

/** A status filter: undefined when absent or empty, else the stored status of the name's group. */
export function parseStatusFilter(
  value: unknown,
  loc: FieldLoc = ['query', 'status'],
): TaskStatus | undefined {
  if (isAbsent(value)) return undefined;
  const group = typeof value === 'string' ? statusGroup(value) : undefined;
  if (group === undefined) {
    const seen =
      typeof value === 'string' ? `"${value.slice(0, 40)}" is not a status name` : 'not a status name';
    invalid(loc, `${seen}; valid status names: ${STATUS_NAMES.join(', ')}`, 'enum');
  }
  return group;
}

/** A `limit`: the default when absent or empty, lowered to the maximum above it, refused below 1. */
export function parseLimit(value: unknown, bounds: LimitBounds, loc: FieldLoc = ['query', 'limit']): number {
  if (isAbsent(value)) return bounds.default;
  const n = wholeNumber(value);
  if (n === undefined || n < 1) {
    invalid(loc, `must be a whole number from 1 to ${bounds.max} (default ${bounds.default})`, 'int_parsing');
  }
  return Math.min(n, bounds.max);
}

/** A task id (required). */
export function parseTaskId(value: unknown, loc: FieldLoc = ['body', 'task_id']): number {
  if (isAbsent(value)) invalid(loc, 'is required (a task id)', 'missing');
  return taskIdOf(value, loc);
}

/** A task id filter: undefined when absent or empty. */
export function parseOptionalTaskId(
  value: unknown,
  loc: FieldLoc = ['query', 'task_id'],
): number | undefined {
  return isAbsent(value) ? undefined : taskIdOf(value, loc);
}

/**
 * A priority: a whole number from PRIORITY_MIN to PRIORITY_MAX or one of PRIORITY_WORDS (`low`,
 * `normal`, `high`, `urgent`); PRIORITY_DEFAULT when absent or empty.
 */
export function parsePriority(value: unknown, loc: FieldLoc = ['body', 'priority']): number {
  if (isAbsent(value)) return PRIORITY_DEFAULT;
  const word = typeof value === 'string' ? PRIORITY_WORDS[value.trim().toLowerCase()] : undefined;
  if (word !== undefined) return word;
  const n = wholeNumber(value);
  if (n === undefined || n < PRIORITY_MIN || n > PRIORITY_MAX) {
    const words = Object.entries(PRIORITY_WORDS)
      .map(([w, p]) => `${w} (${p})`)
      .join(', ');
    invalid(loc, `must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX} or one of ${words}`, 'enum');
  }
  return n;
}

// Helpers ---------------------------------------------------------------------------------------

async function existingTask(store: TaskStore, id: number): Promise<Task> {
  const task = await store.getTask(id);
  if (task === undefined) throw new NotFoundError(`Task ${id} not found`);
  return task;
}

function taskIdOf(value: unknown, loc: FieldLoc): number {
  const n = wholeNumber(value);
  if (n === undefined || n < 1) invalid(loc, 'must be a task id (a whole number from 1)', 'int_parsing');
  return n;
}

function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** A safe integer from a number or a string of digits; undefined otherwise. */
function wholeNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value !== 'string' || !/^\s*[+-]?\d+\s*$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

function invalid(loc: FieldLoc, msg: string, type: string): never {
  throw new ValidationError([{ loc, msg, type }]);
}
