import { ServiceUnavailableError } from '@clinicalsuite/kit';
import type {
  LogsBody,
  RunsBody,
  SchedulesBody,
  SkillsBody,
  StatsBody,
  TaskDetailBody,
  TaskListBody,
} from '@clinicalsuite/task-agent/store';
import type { TaskStatus } from '../schemas/actions.js';

/**
 * What the proxy's actions need from the task agent's data, with the bodies the spec's action table
 * answers. Two implementations: the agent's HTTP API (online) and the agent's store read through
 * the agent's own body builders, store/queries.ts (offline), so both give the same body for the
 * same data.
 */

/** A task as stored and answered. */
export type Task = TaskDetailBody['task'];

export interface TaskBackend {
  listTasks(
    query: { status: TaskStatus | undefined; limit: number },
    signal: AbortSignal,
  ): Promise<TaskListBody>;
  /** NotFoundError (404) for an unknown id. */
  getTask(id: number, signal: AbortSignal): Promise<TaskDetailBody>;
  createTask(
    input: { title: string; description: string; priority: number },
    signal: AbortSignal,
  ): Promise<Task>;
  /** NotFoundError for an unknown id, ConflictError (409) when already done, failed or cancelled. */
  cancelTask(id: number, signal: AbortSignal): Promise<{ cancelled: boolean }>;
  /** A finished task with its runs and logs, for good. NotFoundError, ConflictError (409) while pending or running. */
  deleteTask(id: number, signal: AbortSignal): Promise<{ deleted: true; id: number }>;
  /** NotFoundError for an unknown task id. */
  listLogs(query: { taskId: number | undefined; limit: number }, signal: AbortSignal): Promise<LogsBody>;
  listRuns(query: { taskId: number | undefined; limit: number }, signal: AbortSignal): Promise<RunsBody>;
  stats(signal: AbortSignal): Promise<StatsBody>;
  skills(signal: AbortSignal): Promise<SkillsBody>;
  schedules(signal: AbortSignal): Promise<SchedulesBody>;
  clearHistory(sessionId: string, signal: AbortSignal): Promise<{ cleared: boolean }>;
}

export interface ChatReply {
  readonly response: string;
  readonly model: string;
  readonly session_id: string;
}

/** The agent itself: its data, and what only it can do. */
export interface AgentBackend extends TaskBackend {
  chat(input: { message: string; sessionId: string | undefined }, signal: AbortSignal): Promise<ChatReply>;
}

/**
 * The agent could not be reached (connection refused, reset, no such host). `delivered` says
 * whether the request may have reached it (a reset: a write may have happened) or certainly did
 * not (connection refused, no such host): only then may a write go to the store.
 */
export class AgentUnavailableError extends Error {
  constructor(
    message: string,
    readonly delivered: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AgentUnavailableError';
  }
}

/**
 * The agent was reached but did not answer within the call's deadline. It is not offline (a slow
 * chat or a busy store is not an outage): the proxy answers 504 and leaves the state to the probes.
 * The request reached it, so a write may still happen.
 */
export class AgentTimeoutError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentTimeoutError';
  }
}

/**
 * The agent was reached and answered 503: up but not ready (starting, its store opening, draining
 * for a shutdown) or unable to do this now (its LLM is down). Its data is in the store all the
 * same, so a read is answered from there as when it is offline; other actions pass the 503 on.
 */
export class AgentNotReadyError extends ServiceUnavailableError {
  constructor(message: string, retryAfterSeconds: number) {
    super(message, retryAfterSeconds);
    this.name = 'AgentNotReadyError';
  }
}
