import { BadRequestError, ValidationError } from '@clinicalsuite/kit';
import {
  LOGS_LIMIT,
  parseLimit,
  parseOptionalTaskId,
  parsePriority,
  parseStatusFilter,
  parseTaskId,
  RUNS_LIMIT,
  TASKS_LIMIT,
  type LimitBounds,
} from '@clinicalsuite/task-agent/store';

/**
 * The actions of `POST /api/agent_proxy.php` (the spec's table) and their fields. Form fields come
 * as strings (multipart, urlencoded) or as JSON values; each is read here into a typed request, and
 * anything wrong answers 400 with a message naming the field and what it must be. Status filters,
 * limits, task ids and priorities are read by the task agent's own parsers (its store/queries.ts),
 * so the proxy accepts exactly what the agent accepts: a `limit` above the maximum is lowered to it.
 */

/** A stored status (the first name of its group). */
export type TaskStatus = NonNullable<ReturnType<typeof parseStatusFilter>>;

export const ACTIONS = [
  'status',
  'chat',
  'list_tasks',
  'get_task',
  'create_task',
  'cancel_task',
  'delete_task',
  'get_task_logs',
  'get_runs',
  'get_stats',
  'get_skills',
  'get_schedules',
  'clear_history',
] as const;
export type ActionName = (typeof ACTIONS)[number];

export const LIMITS: Readonly<Record<'list_tasks' | 'get_task_logs' | 'get_runs', LimitBounds>> = {
  list_tasks: TASKS_LIMIT,
  get_task_logs: LOGS_LIMIT,
  get_runs: RUNS_LIMIT,
};
/** Chat session ids: what the agent accepts. */
export const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface FieldLimits {
  readonly maxMessageChars: number;
  readonly maxTitleChars: number;
  readonly maxDescriptionChars: number;
}

export type ActionRequest =
  | { readonly action: 'status' }
  | { readonly action: 'get_stats' | 'get_skills' | 'get_schedules' }
  | { readonly action: 'chat'; readonly message: string; readonly sessionId: string | undefined }
  | { readonly action: 'list_tasks'; readonly status: TaskStatus | undefined; readonly limit: number }
  | { readonly action: 'get_task' | 'cancel_task' | 'delete_task'; readonly taskId: number }
  | {
      readonly action: 'create_task';
      readonly title: string;
      readonly description: string;
      readonly priority: number;
    }
  | {
      readonly action: 'get_task_logs' | 'get_runs';
      readonly taskId: number | undefined;
      readonly limit: number;
    }
  | { readonly action: 'clear_history'; readonly sessionId: string };

/** Actions that change nothing: answered from the store when the agent is unreachable. */
export const READ_ACTIONS: ReadonlySet<ActionName> = new Set([
  'list_tasks',
  'get_task',
  'get_task_logs',
  'get_runs',
  'get_stats',
  'get_skills',
  'get_schedules',
]);

export function isAction(value: string): value is ActionName {
  return (ACTIONS as readonly string[]).includes(value);
}

type Fields = Readonly<Record<string, unknown>>;

function bad(field: string, message: string): BadRequestError {
  return new BadRequestError(`${field}: ${message}`, { param: field, code: 'invalid_field' });
}

/** The field as text: strings as given, numbers and booleans written out; undefined when absent. */
function text(fields: Fields, name: string): string | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) throw bad(name, 'given more than once');
  throw bad(name, 'must be a string or a number');
}

/**
 * The agent's parser applied to one field: its 422 ValidationError becomes this route's 400 with
 * the same words (`limit: must be a whole number from 1 to 500 (default 50)`).
 */
function agentParsed<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof ValidationError) {
      const issue = error.issues[0];
      throw bad(name, issue?.msg ?? error.message);
    }
    throw error;
  }
}

/** A single value: arrays (a field sent twice) and objects are refused by name. */
function single(fields: Fields, name: string): unknown {
  const value = fields[name];
  if (Array.isArray(value)) throw bad(name, 'given more than once');
  if (typeof value === 'object' && value !== null) throw bad(name, 'must be a string or a number');
  return value;
}

function taskId(fields: Fields): number {
  return agentParsed('task_id', () => parseTaskId(single(fields, 'task_id'), ['body', 'task_id']));
}

function optionalTaskId(fields: Fields): number | undefined {
  return agentParsed('task_id', () => parseOptionalTaskId(single(fields, 'task_id'), ['body', 'task_id']));
}

function limit(fields: Fields, bounds: LimitBounds): number {
  return agentParsed('limit', () => parseLimit(single(fields, 'limit'), bounds, ['body', 'limit']));
}

function sessionId(fields: Fields, required: boolean): string | undefined {
  const raw = text(fields, 'session_id')?.trim();
  if (raw === undefined || raw === '') {
    if (required) throw bad('session_id', 'is required');
    return undefined;
  }
  if (!SESSION_ID.test(raw)) throw bad('session_id', 'must be 1-128 letters, digits, ".", "_", ":", "-"');
  return raw;
}

/** A text field; trimmed unless `keepSpaces` (a description is kept as written). */
function boundedText(
  fields: Fields,
  name: string,
  max: number,
  required: boolean,
  keepSpaces = false,
): string | undefined {
  const raw = text(fields, name);
  const value = keepSpaces ? raw : raw?.trim();
  if (value === undefined || value.trim() === '') {
    if (required) throw bad(name, 'is required and must not be empty');
    return undefined;
  }
  if (value.length > max) throw bad(name, `must be at most ${max} characters`);
  // The agent's store can not keep one (PostgreSQL's text has no NUL): refused before any work,
  // online and offline alike.
  if (value.includes('\u0000')) throw bad(name, 'must not contain NUL characters (\\u0000)');
  return value;
}

function priority(fields: Fields): number {
  return agentParsed('priority', () => parsePriority(single(fields, 'priority'), ['body', 'priority']));
}

/** A status group's stored name; `all` (or nothing) lists every status. */
function statusFilter(fields: Fields): TaskStatus | undefined {
  const value = single(fields, 'status');
  if (typeof value === 'string' && value.trim().toLowerCase() === 'all') return undefined;
  return agentParsed('status', () => parseStatusFilter(value, ['body', 'status']));
}

/** Reads the action and its fields; 400 naming the problem when something is missing or wrong. */
export function parseAction(fields: Fields, limits: FieldLimits): ActionRequest {
  const raw = text(fields, 'action')?.trim() ?? '';
  if (!isAction(raw)) {
    const what = raw === '' ? 'missing action' : 'unknown action';
    throw new BadRequestError(`${what}: valid actions are ${ACTIONS.join(', ')}`, {
      param: 'action',
      code: 'invalid_action',
    });
  }
  switch (raw) {
    case 'status':
      return { action: raw };
    case 'get_stats':
    case 'get_skills':
    case 'get_schedules':
      return { action: raw };
    case 'chat':
      return {
        action: raw,
        message: boundedText(fields, 'message', limits.maxMessageChars, true) ?? '',
        sessionId: sessionId(fields, false),
      };
    case 'list_tasks':
      return { action: raw, status: statusFilter(fields), limit: limit(fields, LIMITS.list_tasks) };
    case 'get_task':
    case 'cancel_task':
    case 'delete_task':
      return { action: raw, taskId: taskId(fields) };
    case 'create_task': {
      // The spec's Task has `title (or name)`.
      const titleField = fields['title'] === undefined && fields['name'] !== undefined ? 'name' : 'title';
      return {
        action: raw,
        title: boundedText(fields, titleField, limits.maxTitleChars, true) ?? '',
        description: boundedText(fields, 'description', limits.maxDescriptionChars, false, true) ?? '',
        priority: priority(fields),
      };
    }
    case 'get_task_logs':
    case 'get_runs':
      return { action: raw, taskId: optionalTaskId(fields), limit: limit(fields, LIMITS[raw]) };
    case 'clear_history':
      return { action: raw, sessionId: sessionId(fields, true) ?? '' };
  }
}
