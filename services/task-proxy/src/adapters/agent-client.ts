import { performance } from 'node:perf_hooks';
import {
  BadGatewayError,
  BadRequestError,
  ConflictError,
  errorCause,
  GatewayTimeoutError,
  HttpClient,
  loggableUrl,
  NotFoundError,
  PayloadTooLargeError,
  TooManyRequestsError,
  UnsupportedMediaTypeError,
  ValidationError,
  type FieldIssue,
  type HttpError,
  type KitMetrics,
  type OutboundResult,
  withoutTrailingSlashes,
} from '@clinicalsuite/kit';
import type { Registry } from 'prom-client';
import type {
  LogsBody,
  RunsBody,
  SchedulesBody,
  SkillsBody,
  StatsBody,
  TaskDetailBody,
  TaskListBody,
} from '@clinicalsuite/task-agent/store';
import {
  AgentNotReadyError,
  AgentTimeoutError,
  AgentUnavailableError,
  type AgentBackend,
  type ChatReply,
  type Task,
} from '../domain/backend.js';
import type { TaskProxyConfig } from '../config.js';
import type { TaskProxyMetrics } from '../metrics.js';
import type { TaskStatus } from '../schemas/actions.js';

/**
 * The task agent's HTTP API (JSON, bearer token), with a deadline on every call. Failures map onto
 * the kit's catalogue: the agent's 4xx pass through with their status and message (404 unknown
 * task, 409 already finished, 422 fields), and its 503 (its LLM is down) with its reason; a refused
 * token or a 5xx is a 502 naming the agent; a connection failure is an AgentUnavailableError,
 * which the proxy turns into an answer from the store (reads) or a clear refusal; no answer within
 * the deadline is an AgentTimeoutError (a 504: the agent is slow, not gone). Calls go through the
 * kit's HttpClient and are never retried (a write may have been done).
 */

export interface AgentClientOptions {
  readonly baseUrl: string;
  readonly token?: string | undefined;
  /** Deadline of the quick calls. */
  readonly timeoutMs: number;
  /** Deadline of a chat call. */
  readonly chatTimeoutMs: number;
  /** Every call's outcome, for metrics (`operation` is a fixed name, never an id). */
  readonly onCall?: (operation: string, outcome: CallOutcome, seconds: number) => void;
  /** The service's metrics, where the exchanges are counted (`upstream="task_agent"`). */
  readonly metrics?: KitMetrics | Registry | undefined;
}

/** The configured agent's client; every call's outcome and duration observed in `upstream`. */
export function agentClientOptions(
  config: TaskProxyConfig,
  metrics: KitMetrics,
  upstream: TaskProxyMetrics['upstream'],
): AgentClientOptions {
  return {
    baseUrl: config.TASK_AGENT_URL,
    metrics,
    token: config.TASK_AGENT_API_TOKEN,
    timeoutMs: config.TASK_AGENT_TIMEOUT_MS,
    chatTimeoutMs: config.TASK_AGENT_CHAT_TIMEOUT_MS,
    onCall: (operation, outcome, seconds) => upstream.observe({ operation, outcome }, seconds),
  };
}

export type CallOutcome = 'ok' | 'client_error' | 'upstream_error' | 'unavailable' | 'timeout' | 'aborted';

export type ProbeResult =
  { readonly state: 'online' } | { readonly state: 'offline'; readonly detail: string };

interface CallSpec {
  readonly operation: string;
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
  readonly timeoutMs?: number;
}

export class AgentClient implements AgentBackend {
  readonly baseUrl: string;
  /** The URL without credentials or query, for messages and logs. */
  readonly displayUrl: string;

  private readonly http: HttpClient;

  constructor(private readonly options: AgentClientOptions) {
    this.baseUrl = withoutTrailingSlashes(options.baseUrl);
    this.displayUrl = loggableUrl(this.baseUrl).replace(/\/\/[^@/]*@/, '//');
    this.http = new HttpClient({
      name: 'task_agent',
      baseUrl: this.baseUrl,
      label: `The task agent at ${this.displayUrl}`,
      token: options.token,
      timeoutMs: options.timeoutMs,
      failures: {
        // The request never reached the agent unless the connection was made.
        unreachable: (f) =>
          new AgentUnavailableError(
            `the task agent at ${this.displayUrl} is unreachable (${f.cause})`,
            f.delivered,
            {
              cause: f.error,
            },
          ),
      },
      metrics: options.metrics,
    });
  }

  async listTasks(
    query: { status: TaskStatus | undefined; limit: number },
    signal: AbortSignal,
  ): Promise<TaskListBody> {
    const params = new URLSearchParams({ limit: String(query.limit) });
    if (query.status !== undefined) params.set('status', query.status);
    const body = await this.call(
      { operation: 'list_tasks', method: 'GET', path: `/api/v1/tasks?${params.toString()}` },
      signal,
    );
    return { tasks: this.array(body, 'tasks') as TaskListBody['tasks'] };
  }

  async getTask(id: number, signal: AbortSignal): Promise<TaskDetailBody> {
    const body = await this.call(
      { operation: 'get_task', method: 'GET', path: `/api/v1/tasks/${id}` },
      signal,
    );
    return {
      task: this.object(body, 'task') as Task,
      logs: this.array(body, 'logs') as TaskDetailBody['logs'],
      runs: this.array(body, 'runs') as TaskDetailBody['runs'],
    };
  }

  async createTask(
    input: { title: string; description: string; priority: number },
    signal: AbortSignal,
  ): Promise<Task> {
    const body = await this.call(
      { operation: 'create_task', method: 'POST', path: '/api/v1/tasks', body: input },
      signal,
    );
    return this.object(body, 'task') as Task;
  }

  async cancelTask(id: number, signal: AbortSignal): Promise<{ cancelled: boolean }> {
    const body = await this.call(
      { operation: 'cancel_task', method: 'POST', path: `/api/v1/tasks/${id}/cancel`, body: {} },
      signal,
    );
    const cancelled = (body as { cancelled?: unknown }).cancelled;
    if (typeof cancelled !== 'boolean') throw this.malformed('cancelled');
    return { cancelled };
  }

  async deleteTask(id: number, signal: AbortSignal): Promise<{ deleted: true; id: number }> {
    const body = await this.call(
      { operation: 'delete_task', method: 'DELETE', path: `/api/v1/tasks/${id}` },
      signal,
    );
    if ((body as { deleted?: unknown }).deleted !== true) throw this.malformed('deleted');
    return { deleted: true, id };
  }

  async listLogs(
    query: { taskId: number | undefined; limit: number },
    signal: AbortSignal,
  ): Promise<LogsBody> {
    const body = await this.call(
      { operation: 'get_task_logs', method: 'GET', path: `/api/v1/logs?${listParams(query)}` },
      signal,
    );
    return { logs: this.array(body, 'logs') as LogsBody['logs'] };
  }

  async listRuns(
    query: { taskId: number | undefined; limit: number },
    signal: AbortSignal,
  ): Promise<RunsBody> {
    const body = await this.call(
      { operation: 'get_runs', method: 'GET', path: `/api/v1/runs?${listParams(query)}` },
      signal,
    );
    return { runs: this.array(body, 'runs') as RunsBody['runs'] };
  }

  async stats(signal: AbortSignal): Promise<StatsBody> {
    const body = await this.call({ operation: 'get_stats', method: 'GET', path: '/api/v1/stats' }, signal);
    return { stats: this.object(body, 'stats') as StatsBody['stats'] };
  }

  async skills(signal: AbortSignal): Promise<SkillsBody> {
    const body = await this.call({ operation: 'get_skills', method: 'GET', path: '/api/v1/skills' }, signal);
    return { skills: this.array(body, 'skills') as SkillsBody['skills'] };
  }

  async schedules(signal: AbortSignal): Promise<SchedulesBody> {
    const body = await this.call(
      { operation: 'get_schedules', method: 'GET', path: '/api/v1/schedules' },
      signal,
    );
    return { schedules: this.array(body, 'schedules') as SchedulesBody['schedules'] };
  }

  async chat(
    input: { message: string; sessionId: string | undefined },
    signal: AbortSignal,
  ): Promise<ChatReply> {
    const body = await this.call(
      {
        operation: 'chat',
        method: 'POST',
        path: '/api/v1/chat',
        body: {
          message: input.message,
          ...(input.sessionId === undefined ? {} : { session_id: input.sessionId }),
        },
        timeoutMs: this.options.chatTimeoutMs,
      },
      signal,
    );
    const b = body as { response?: unknown; model?: unknown; session_id?: unknown };
    if (typeof b.response !== 'string' || typeof b.model !== 'string' || typeof b.session_id !== 'string')
      throw this.malformed('response, model and session_id');
    return { response: b.response, model: b.model, session_id: b.session_id };
  }

  async clearHistory(sessionId: string, signal: AbortSignal): Promise<{ cleared: boolean }> {
    const body = await this.call(
      { operation: 'clear_history', method: 'DELETE', path: `/api/v1/chat/${encodeURIComponent(sessionId)}` },
      signal,
    );
    const cleared = (body as { cleared?: unknown }).cleared;
    if (typeof cleared !== 'boolean') throw this.malformed('cleared');
    return { cleared };
  }

  /** The agent's `/health`: online only when it answers 200. */
  async probe(signal: AbortSignal): Promise<ProbeResult> {
    try {
      // Only the caller's signal bounds a probe.
      const res = await this.http.request({ path: '/health', signal, timeoutMs: Infinity });
      if (res.status === 200) return { state: 'online' };
      const said = agentMessage(this.http.redact(res.text));
      return {
        state: 'offline',
        detail: `the task agent at ${this.displayUrl} answered /health with ${res.status}${said === undefined ? '' : `: ${said}`}`,
      };
    } catch (error) {
      if (signal.aborted)
        return {
          state: 'offline',
          detail: `the task agent at ${this.displayUrl} did not answer /health in time`,
        };
      const cause = error instanceof AgentUnavailableError ? errorCause(error.cause) : errorCause(error);
      return {
        state: 'offline',
        detail: `the task agent at ${this.displayUrl} is unreachable (${cause})`,
      };
    }
  }

  private async call(spec: CallSpec, signal: AbortSignal): Promise<unknown> {
    const started = performance.now();
    let outcome: CallOutcome = 'ok';
    try {
      return await this.send(spec, signal);
    } catch (error) {
      outcome = signal.aborted
        ? 'aborted'
        : error instanceof AgentUnavailableError
          ? 'unavailable'
          : error instanceof AgentTimeoutError
            ? 'timeout'
            : (error as HttpError).status < 500
              ? 'client_error'
              : 'upstream_error';
      throw error;
    } finally {
      this.options.onCall?.(spec.operation, outcome, (performance.now() - started) / 1000);
    }
  }

  private async send(spec: CallSpec, signal: AbortSignal): Promise<unknown> {
    const timeoutMs = spec.timeoutMs ?? this.options.timeoutMs;
    const res = await this.http.request({
      method: spec.method,
      path: spec.path,
      ...(spec.body === undefined ? {} : { json: spec.body }),
      signal,
      timeoutMs,
      failures: {
        timeout: (f) =>
          new AgentTimeoutError(
            `the task agent at ${this.displayUrl} did not answer within ${timeoutMs} ms (${spec.operation === 'chat' ? 'TASK_AGENT_CHAT_TIMEOUT_MS' : 'TASK_AGENT_TIMEOUT_MS'})`,
            { cause: f.error },
          ),
      },
    });
    if (res.ok) {
      try {
        return JSON.parse(res.text) as unknown;
      } catch {
        throw new BadGatewayError(
          `The task agent at ${this.displayUrl} answered with something other than JSON`,
        );
      }
    }
    throw this.statusFailure(res, this.http.redact(res.text));
  }

  private statusFailure(res: OutboundResult, text: string): Error {
    const said = agentMessage(text) ?? `status ${res.status}`;
    switch (res.status) {
      case 400:
        return new BadRequestError(said);
      case 401:
      case 403:
        return new BadGatewayError(
          `The task agent at ${this.displayUrl} refused the proxy's token (${res.status}): set TASK_AGENT_API_TOKEN to the agent's token`,
        );
      case 404:
        return new NotFoundError(said);
      case 409:
        return new ConflictError(said);
      case 413:
        return new PayloadTooLargeError(said);
      case 415:
        return new UnsupportedMediaTypeError(said);
      case 422: {
        const issues = agentIssues(text);
        return issues === undefined ? new BadRequestError(said) : new ValidationError(issues);
      }
      case 429: {
        const after = Number(res.headers['retry-after'] ?? '5');
        return new TooManyRequestsError(said, Number.isFinite(after) ? after : 5);
      }
      case 503: {
        // The agent is up but cannot do this now (its LLM is down, it is shutting down): its reason.
        const after = Number(res.headers['retry-after'] ?? '5');
        return new AgentNotReadyError(
          `The task agent at ${this.displayUrl} is not available (503): ${said}`,
          Number.isFinite(after) ? after : 5,
        );
      }
      case 504:
        return new GatewayTimeoutError(`The task agent at ${this.displayUrl} timed out: ${said}`);
      default:
        if (res.status < 500) return new BadRequestError(`${said} (the task agent answered ${res.status})`);
        return new BadGatewayError(`The task agent at ${this.displayUrl} failed (${res.status}): ${said}`);
    }
  }

  // The agent's JSON is passed on as it came (the shapes are the agent's schemas; only the keys are checked).
  private array(body: unknown, key: string): unknown[] {
    const value = (body as Record<string, unknown> | null)?.[key];
    if (!Array.isArray(value)) throw this.malformed(key);
    return value;
  }

  private object(body: unknown, key: string): object {
    const value = (body as Record<string, unknown> | null)?.[key];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw this.malformed(key);
    return value;
  }

  private malformed(what: string): BadGatewayError {
    return new BadGatewayError(`The task agent at ${this.displayUrl} answered without ${what}`);
  }
}

function listParams(query: { taskId: number | undefined; limit: number }): string {
  const params = new URLSearchParams({ limit: String(query.limit) });
  if (query.taskId !== undefined) params.set('task_id', String(query.taskId));
  return params.toString();
}

/** The message of a kit error body (`{detail}`) or an OpenAI one, cut short. */
function agentMessage(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { detail?: unknown; error?: { message?: unknown }; message?: unknown };
    const message =
      typeof body.detail === 'string'
        ? body.detail
        : Array.isArray(body.detail)
          ? (body.detail as { msg?: unknown }[]).map((i) => String(i.msg)).join('; ')
          : typeof body.error?.message === 'string'
            ? body.error.message
            : typeof body.message === 'string'
              ? body.message
              : undefined;
    return message?.slice(0, 500);
  } catch {
    return undefined;
  }
}

function agentIssues(text: string): FieldIssue[] | undefined {
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    if (!Array.isArray(body.detail)) return undefined;
    return (body.detail as { loc?: unknown; msg?: unknown; type?: unknown }[]).map((i) => ({
      loc: Array.isArray(i.loc) ? (i.loc as (string | number)[]) : ['body'],
      msg: String(i.msg),
      type: typeof i.type === 'string' ? i.type : 'invalid',
    }));
  } catch {
    return undefined;
  }
}
