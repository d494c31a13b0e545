import { errorCause, ServiceUnavailableError, type Logger } from '@clinicalsuite/kit';
import {
  cancelTaskBody,
  deleteTaskBody,
  logsBody,
  openTaskStore,
  runsBody,
  schedulesBody,
  skillsBody,
  statsBody,
  taskDetailBody,
  listTasksBody,
  type TaskStore,
} from '@clinicalsuite/task-agent/store';
import type { TaskProxyConfig } from '../config.js';
import type { Task, TaskBackend } from '../domain/backend.js';

/**
 * The task agent's store, for answers while the agent is offline: its SQLite file (TASK_AGENT_DB,
 * shared through WAL with the running agent) or its PostgreSQL (DATABASE_URL). Opened on first use
 * without creating anything (pointed at the wrong file it fails clearly instead of answering "no
 * tasks"), and opened again later after a failure. Reads go through the agent's own body builders
 * (store/queries.ts), so each answer is the one the agent gives for the same data.
 */

export type StoreKind = 'sqlite' | 'postgresql' | 'none';

export interface StoreHandleOptions {
  readonly databaseUrl: string | undefined;
  readonly sqlitePath: string | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  /** Wait after a failed open before trying again, in ms. */
  readonly retryMs?: number;
  /** Opens the store (tests may count opens); default the agent's openTaskStore without create. */
  readonly open?: () => Promise<TaskStore>;
}

/** The configured store: DATABASE_URL, else TASK_AGENT_DB (`open` replaces the opening, for tests). */
export function storeHandleOptions(
  config: TaskProxyConfig,
  parts: { logger: Logger; now: () => number; open?: (() => Promise<TaskStore>) | undefined },
): StoreHandleOptions {
  return {
    databaseUrl: config.DATABASE_URL,
    sqlitePath: config.TASK_AGENT_DB,
    logger: parts.logger,
    now: parts.now,
    ...(parts.open === undefined ? {} : { open: parts.open }),
  };
}

export interface StoreHealth {
  readonly kind: StoreKind;
  readonly ok: boolean | null;
  readonly detail: string | null;
}

/** How a cancel made offline is logged in the task's log ("cancelled by …"). */
export const OFFLINE_CANCEL_BY = 'the task proxy (agent offline)';
export const OFFLINE_CREATE_LOG = 'created through the task proxy while the agent was offline (queued)';

export class StoreHandle {
  readonly kind: StoreKind;
  private opened: Promise<TaskStore> | undefined;
  private failedAt = 0;
  private lastError: string | null = null;
  private readonly retryMs: number;

  constructor(private readonly options: StoreHandleOptions) {
    this.kind =
      options.databaseUrl !== undefined ? 'postgresql' : options.sqlitePath !== undefined ? 'sqlite' : 'none';
    this.retryMs = options.retryMs ?? 2000;
  }

  /** The TaskBackend over the store, or undefined when none is configured. */
  backend(): TaskBackend | undefined {
    return this.kind === 'none' ? undefined : new StoreBackend(() => this.store(), this.options.now);
  }

  /** The open store; ServiceUnavailableError naming the cause when it cannot be opened. */
  async store(): Promise<TaskStore> {
    if (this.kind === 'none') throw new ServiceUnavailableError('No store is configured');
    if (this.opened === undefined) {
      const wait = this.failedAt + this.retryMs - this.options.now();
      if (this.lastError !== null && wait > 0)
        throw new ServiceUnavailableError(
          `The task agent's store cannot be opened: ${this.lastError}`,
          wait / 1000,
        );
      this.opened = this.open();
    }
    return this.opened;
  }

  async health(): Promise<StoreHealth> {
    if (this.kind === 'none') return { kind: 'none', ok: null, detail: null };
    try {
      const store = await this.store();
      const ok = await store.ping();
      return { kind: this.kind, ok, detail: ok ? null : 'the store does not answer' };
    } catch (error) {
      return { kind: this.kind, ok: false, detail: error instanceof Error ? error.message : String(error) };
    }
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (opened !== undefined) await opened.then((s) => s.close()).catch(() => undefined);
  }

  private open(): Promise<TaskStore> {
    const open =
      this.options.open ??
      (() =>
        openTaskStore({
          databaseUrl: this.options.databaseUrl,
          sqlitePath: this.options.sqlitePath ?? '',
          create: false,
        }));
    return open().then(
      (store) => {
        this.lastError = null;
        this.options.logger.info({ kind: this.kind }, 'task agent store open for offline answers');
        return store;
      },
      (error: unknown) => {
        this.opened = undefined;
        this.failedAt = this.options.now();
        this.lastError = errorCause(error);
        this.options.logger.error({ err: error, kind: this.kind }, 'task agent store cannot be opened');
        throw new ServiceUnavailableError(`The task agent's store cannot be opened: ${this.lastError}`, 5, {
          cause: error,
        });
      },
    );
  }
}

/** The proxy's actions over the store: the agent's queries for reads, the store's writes. */
class StoreBackend implements TaskBackend {
  constructor(
    private readonly store: () => Promise<TaskStore>,
    private readonly now: () => number,
  ) {}

  async listTasks(query: { status: string | undefined; limit: number }) {
    return listTasksBody(await this.store(), { status: query.status, limit: query.limit }, 'body');
  }

  async getTask(id: number) {
    return taskDetailBody(await this.store(), id, ['body', 'task_id']);
  }

  async createTask(input: { title: string; description: string; priority: number }): Promise<Task> {
    const store = await this.store();
    const now = new Date(this.now());
    const task = await store.createTask(input, now);
    await store.addLog(task.id, null, 'info', OFFLINE_CREATE_LOG, now);
    return task;
  }

  /** As the agent's `POST /api/v1/tasks/:id/cancel`: 404 unknown, 409 already finished. */
  async cancelTask(id: number): Promise<{ cancelled: boolean }> {
    await cancelTaskBody(await this.store(), id, OFFLINE_CANCEL_BY, new Date(this.now()));
    return { cancelled: true };
  }

  /** As the agent's `DELETE /api/v1/tasks/:id`: 404 unknown, 409 pending or running. */
  async deleteTask(id: number): Promise<{ deleted: true; id: number }> {
    return deleteTaskBody(await this.store(), id);
  }

  async listLogs(query: { taskId: number | undefined; limit: number }) {
    return logsBody(await this.store(), { taskId: query.taskId, limit: query.limit }, 'body');
  }

  async listRuns(query: { taskId: number | undefined; limit: number }) {
    return runsBody(await this.store(), { taskId: query.taskId, limit: query.limit }, 'body');
  }

  async stats() {
    return statsBody(await this.store());
  }

  async skills() {
    return skillsBody(await this.store());
  }

  async schedules() {
    return schedulesBody(await this.store());
  }

  async clearHistory(sessionId: string): Promise<{ cleared: boolean }> {
    return { cleared: await (await this.store()).clearChat(sessionId) };
  }
}
