import { BadGatewayError, GatewayTimeoutError, ServiceUnavailableError } from '@clinicalsuite/kit';
import type { ActionRequest } from '../schemas/actions.js';
import { READ_ACTIONS } from '../schemas/actions.js';
import {
  AgentNotReadyError,
  AgentTimeoutError,
  AgentUnavailableError,
  type AgentBackend,
  type TaskBackend,
} from './backend.js';

/**
 * One action, online or offline. Online (the agent's /health answered 200 at the last probe) the
 * agent answers; when a call finds it unreachable the proxy goes offline at once and a read is
 * answered from the store instead (a write too when it certainly did not reach the agent), as is a
 * read the agent refuses with 503 (starting, draining for a shutdown). Offline,
 * the store answers reads, `create_task` is queued in the store (the agent runs it when back),
 * `cancel_task`, `delete_task` and `clear_history` are applied there, and `chat` is refused with
 * 503. A call the agent does not answer in time is a 504 and leaves the agent online: it was
 * reached, it is slow (a long chat, a busy store), and other users' calls still go to it.
 */

export type AnswerSource = 'agent' | 'store' | 'proxy';

export interface ActionAnswer {
  readonly body: object;
  readonly source: AnswerSource;
}

export interface ProxyDeps {
  readonly agent: AgentBackend;
  /** The agent's store; undefined when none is configured. */
  readonly store: TaskBackend | undefined;
  /** Whether the agent is online (after its first probe). */
  readonly online: () => Promise<{ online: boolean; detail: string | null }>;
  /** A call found the agent unreachable. */
  readonly markOffline: (detail: string) => void;
}

export const QUEUED_MESSAGE =
  'The task agent is offline: the task is queued in its store and runs when the agent is back.';

export async function runAction(
  request: ActionRequest,
  deps: ProxyDeps,
  signal: AbortSignal,
): Promise<ActionAnswer> {
  const { online, detail } = await deps.online();
  if (request.action === 'status')
    return { body: { status: online ? 'online' : 'offline' }, source: 'proxy' };
  if (online) {
    try {
      return { body: await fromAgent(request, deps.agent, signal), source: 'agent' };
    } catch (error) {
      if (error instanceof AgentTimeoutError) throw timedOut(request.action, error);
      // Reached but not ready (starting, draining): its data is in the store all the same. The
      // agent is not marked offline: its probe says when it is, and writes still wait for it.
      if (error instanceof AgentNotReadyError && READ_ACTIONS.has(request.action) && deps.store !== undefined)
        return fromStore(request, deps, error.message, signal);
      if (!(error instanceof AgentUnavailableError)) throw error;
      deps.markOffline(error.message);
      const safe = READ_ACTIONS.has(request.action) || !error.delivered;
      if (!safe) {
        throw new BadGatewayError(
          `${capitalize(error.message)}; it may have received the request: check with ${request.action === 'create_task' ? 'list_tasks' : 'get_task'} before trying again`,
        );
      }
      return fromStore(request, deps, error.message, signal);
    }
  }
  return fromStore(request, deps, detail ?? 'the task agent is offline', signal);
}

async function fromAgent(
  request: Exclude<ActionRequest, { action: 'status' }>,
  agent: AgentBackend,
  signal: AbortSignal,
): Promise<object> {
  switch (request.action) {
    case 'chat':
      return { ...(await agent.chat({ message: request.message, sessionId: request.sessionId }, signal)) };
    case 'create_task': {
      const task = await agent.createTask(
        { title: request.title, description: request.description, priority: request.priority },
        signal,
      );
      return { id: task.id, status: task.status };
    }
    default:
      return answer(request, agent, signal);
  }
}

async function fromStore(
  request: Exclude<ActionRequest, { action: 'status' }>,
  deps: ProxyDeps,
  why: string,
  signal: AbortSignal,
): Promise<ActionAnswer> {
  if (request.action === 'chat')
    throw new ServiceUnavailableError(
      `The task agent is offline (${why}): chat works only while it is online`,
    );
  const store = deps.store;
  if (store === undefined) {
    throw new ServiceUnavailableError(
      `The task agent is offline (${why}) and no store is configured to answer from: set DATABASE_URL ` +
        '(the agent’s PostgreSQL) or TASK_AGENT_DB (the agent’s SQLite file) on the task proxy',
    );
  }
  if (request.action === 'create_task') {
    const task = await store.createTask(
      { title: request.title, description: request.description, priority: request.priority },
      signal,
    );
    return {
      body: { id: task.id, status: task.status, queued: true, message: QUEUED_MESSAGE },
      source: 'store',
    };
  }
  return { body: await answer(request, store, signal), source: 'store' };
}

/** The actions both paths answer alike. */
async function answer(
  request: Exclude<ActionRequest, { action: 'status' | 'chat' | 'create_task' }>,
  backend: TaskBackend,
  signal: AbortSignal,
): Promise<object> {
  switch (request.action) {
    case 'list_tasks':
      return backend.listTasks({ status: request.status, limit: request.limit }, signal);
    case 'get_task':
      return { ...(await backend.getTask(request.taskId, signal)) };
    case 'cancel_task':
      return backend.cancelTask(request.taskId, signal);
    case 'delete_task':
      return backend.deleteTask(request.taskId, signal);
    case 'get_task_logs':
      return backend.listLogs({ taskId: request.taskId, limit: request.limit }, signal);
    case 'get_runs':
      return backend.listRuns({ taskId: request.taskId, limit: request.limit }, signal);
    case 'get_stats':
      return backend.stats(signal);
    case 'get_skills':
      return backend.skills(signal);
    case 'get_schedules':
      return backend.schedules(signal);
    case 'clear_history':
      return backend.clearHistory(request.sessionId, signal);
  }
}

/** What a call the agent did not answer in time may still have done. */
function timedOut(action: ActionRequest['action'], error: AgentTimeoutError): GatewayTimeoutError {
  const said = capitalize(error.message);
  switch (action) {
    case 'create_task':
      return new GatewayTimeoutError(
        `${said}; it may still create the task: check with list_tasks before trying again`,
      );
    case 'cancel_task':
      return new GatewayTimeoutError(
        `${said}; it may still cancel the task: check with get_task before trying again`,
      );
    case 'delete_task':
      return new GatewayTimeoutError(
        `${said}; it may still delete the task: check with get_task before trying again`,
      );
    case 'clear_history':
      return new GatewayTimeoutError(`${said}; it may still clear the history`);
    case 'chat':
      // The agent aborts a chat whose caller went away, so the turn is not kept: sending it again is safe.
      return new GatewayTimeoutError(`${said}; the chat was stopped: try again`);
    default:
      return new GatewayTimeoutError(`${said}: try again`);
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
