/* eslint-disable @typescript-eslint/require-await -- better-sqlite3 is synchronous; the TaskStore
   interface is asynchronous for PostgreSQL, and async methods turn SQLite's throws into rejections. */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { FINAL_STATUSES, PRIORITY_MAX, PRIORITY_MIN } from '../domain/types.js';
import type {
  ChatMessage,
  LogLevel,
  Run,
  Schedule,
  SkillEntry,
  Task,
  TaskLog,
  TaskStats,
  TaskStatus,
} from '../domain/types.js';
import {
  CHAT_ROLE_CHECK,
  chatFromRow,
  iso,
  leaseUntil,
  LOG_LEVEL_CHECK,
  logFromRow,
  messages,
  num,
  numOrNull,
  RUN_STATUS_CHECK,
  runFromRow,
  scheduleFromRow,
  skillFromRow,
  statsFromCounts,
  TASK_STATUS_CHECK,
  taskFromRow,
  UnknownTaskError,
  type Row,
  storable,
  storableOrNull,
  FINAL_STATUS_FILTER,
} from './sql.js';
import type {
  CancelResult,
  DeleteTaskResult,
  Claim,
  LeaseState,
  NewSchedule,
  NewTask,
  NextRun,
  Recovered,
  RunOutcome,
  TaskStore,
} from './types.js';

/**
 * The embedded store: one SQLite file in WAL mode (readers never wait for the writer) with
 * `synchronous=FULL` (a committed write is on disk when the answer says so). Several processes may
 * open the file at once (the agent and the task proxy, or an agent and its restarted self): every
 * write is one `BEGIN IMMEDIATE` transaction, and `busy_timeout` makes a process wait for another's
 * write lock instead of failing with SQLITE_BUSY. A claim reads and takes the task under that one
 * write lock, so no two processes ever claim the same task.
 *
 * The schema's version is `PRAGMA user_version`; migrations run inside one immediate transaction,
 * re-reading the version under the lock, so two processes starting at once migrate once.
 */

export interface SqliteTaskStoreOptions {
  /**
   * Create the file (and its directory) and the schema when missing; default true. The task proxy
   * opens with `false`: a wrong path must fail loudly, not answer "no tasks" from an empty file.
   */
  readonly create?: boolean;
  /** How long a statement waits for another connection's write lock, in ms (default 5000). */
  readonly busyTimeoutMs?: number;
}

export const SQLITE_BUSY_TIMEOUT_MS = 5000;

const PRIORITY_CHECK = `priority BETWEEN ${PRIORITY_MIN} AND ${PRIORITY_MAX}`;

/** Migration n (0-based) takes the schema from user_version n to n + 1. Append only. */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `
CREATE TABLE schedules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  title TEXT NOT NULL,
  description TEXT NOT NULL,
  priority INTEGER NOT NULL CHECK (${PRIORITY_CHECK}),
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  next_run_at TEXT,
  last_run_at TEXT,
  last_task_id INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1;

CREATE TABLE tasks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  title TEXT NOT NULL,
  description TEXT NOT NULL,
  priority INTEGER NOT NULL CHECK (${PRIORITY_CHECK}),
  status TEXT NOT NULL CHECK (${TASK_STATUS_CHECK}),
  result TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  schedule_id INTEGER REFERENCES schedules (id) ON DELETE SET NULL,
  run_id INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX tasks_claim ON tasks (priority DESC, id) WHERE status = 'pending';
CREATE INDEX tasks_status ON tasks (status, id);
CREATE INDEX tasks_schedule ON tasks (schedule_id);

CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (${RUN_STATUS_CHECK}),
  worker TEXT NOT NULL,
  steps INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  output TEXT,
  error TEXT,
  lease_expires_at TEXT
);
CREATE INDEX runs_task ON runs (task_id, id);
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE status = 'running';

CREATE TABLE logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  run_id INTEGER REFERENCES runs (id) ON DELETE CASCADE,
  level TEXT NOT NULL CHECK (${LOG_LEVEL_CHECK}),
  message TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX logs_task ON logs (task_id, id);
CREATE INDEX logs_run ON logs (run_id);

CREATE TABLE skills (
  position INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  description TEXT NOT NULL,
  input_schema TEXT NOT NULL,
  service TEXT
);

CREATE TABLE chat_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (${CHAT_ROLE_CHECK}),
  content TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX chat_session ON chat_messages (session_id, id);
`,
];

export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

/** A task row joined with its run, for the lease checks. */
interface RunHold {
  readonly status: string;
  readonly worker: string;
  readonly task_id: number;
  readonly task_status: TaskStatus;
  readonly task_result: string | null;
  readonly current_run: number | null;
}

export class SqliteTaskStore implements TaskStore {
  readonly kind = 'sqlite';
  readonly path: string;
  private readonly db: Database.Database;
  private readonly create: boolean;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(path: string, options: SqliteTaskStoreOptions = {}) {
    this.create = options.create ?? true;
    const memory = path === ':memory:';
    this.path = memory ? path : resolve(path);
    if (!memory && !this.create && !existsSync(this.path)) {
      throw new Error(
        `The task database ${this.path} does not exist; it is created by the task agent, so check that ` +
          'this path is the one the agent writes (its volume mounted here too)',
      );
    }
    if (!memory) mkdirSync(dirname(this.path), { recursive: true });
    this.db = new Database(this.path, { fileMustExist: !this.create });
    try {
      this.db.pragma(
        `busy_timeout = ${String(Math.max(0, Math.floor(options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS)))}`,
      );
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('foreign_keys = ON');
    } catch (error) {
      this.db.close();
      throw error;
    }
  }

  async init(): Promise<void> {
    const found = this.userVersion();
    if (found > SQLITE_SCHEMA_VERSION) throw this.newerSchema(found);
    if (found === SQLITE_SCHEMA_VERSION) return;
    if (!this.create && found === 0) {
      throw new Error(
        `${this.path} holds no task agent schema (user_version 0): it is not the task agent's database, ` +
          'or the agent has not started on it yet',
      );
    }
    this.write(() => {
      const version = this.userVersion();
      if (version > SQLITE_SCHEMA_VERSION) throw this.newerSchema(version);
      for (const migration of SQLITE_MIGRATIONS.slice(version)) this.db.exec(migration);
      this.db.pragma(`user_version = ${String(SQLITE_SCHEMA_VERSION)}`);
    });
  }

  async close(): Promise<void> {
    this.statements.clear();
    if (this.db.open) this.db.close();
  }

  async ping(): Promise<boolean> {
    try {
      return this.one('SELECT 1 AS ok')?.['ok'] === 1;
    } catch {
      return false;
    }
  }

  // Tasks --------------------------------------------------------------------------------------

  async createTask(input: NewTask, now: Date): Promise<Task> {
    return this.write(() => this.insertTask(input, now));
  }

  async getTask(id: number): Promise<Task | undefined> {
    const row = this.taskRow(id);
    return row === undefined ? undefined : taskFromRow(row);
  }

  async listTasks(filter: { status?: TaskStatus; limit: number }): Promise<Task[]> {
    const rows =
      filter.status === undefined
        ? this.all('SELECT * FROM tasks ORDER BY id DESC LIMIT ?', filter.limit)
        : this.all(
            'SELECT * FROM tasks WHERE status = ? ORDER BY id DESC LIMIT ?',
            filter.status,
            filter.limit,
          );
    return rows.map(taskFromRow);
  }

  async cancelTask(id: number, by: string, now: Date): Promise<CancelResult> {
    return this.write((): CancelResult => {
      const row = this.taskRow(id);
      if (row === undefined) return { cancelled: false, task: undefined, previous: undefined };
      const task = taskFromRow(row);
      if (task.status !== 'pending' && task.status !== 'running') {
        return { cancelled: false, task, previous: task.status };
      }
      this.run('UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?', 'cancelled', iso(now), id);
      const runId = task.status === 'running' ? numOrNull(row['run_id']) : null;
      this.insertLog(id, runId, 'info', messages.cancelled(by), now);
      return { cancelled: true, task: this.task(id), previous: task.status };
    });
  }

  async deleteTask(id: number): Promise<DeleteTaskResult> {
    return this.write((): DeleteTaskResult => {
      const row = this.taskRow(id);
      if (row === undefined) return 'not_found';
      if (!FINAL_STATUSES.has(taskFromRow(row).status)) return 'active';
      // Runs and logs go with it (ON DELETE CASCADE).
      this.run('DELETE FROM tasks WHERE id = ?', id);
      return 'deleted';
    });
  }

  async deleteFinishedBefore(cutoff: Date, limit: number): Promise<number> {
    return this.write(
      () =>
        this.run(
          `DELETE FROM tasks WHERE id IN (
             SELECT id FROM tasks WHERE ${FINAL_STATUS_FILTER} AND updated_at < ?
             ORDER BY updated_at, id LIMIT ?)`,
          iso(cutoff),
          limit,
        ).changes,
    );
  }

  async requeueTask(id: number, now: Date): Promise<Task | undefined> {
    return this.write((): Task | undefined => {
      const row = this.taskRow(id);
      if (row === undefined) return undefined;
      const task = taskFromRow(row);
      if (!FINAL_STATUSES.has(task.status)) return task;
      const at = iso(now);
      const runId = numOrNull(row['run_id']);
      if (runId !== null) {
        this.run(
          `UPDATE runs SET status = 'cancelled', finished_at = ?, error = ?, lease_expires_at = NULL
           WHERE id = ? AND status = 'running'`,
          at,
          messages.supersededRun,
          runId,
        );
      }
      this.run("UPDATE tasks SET status = 'pending', attempts = 0, updated_at = ? WHERE id = ?", at, id);
      return this.task(id);
    });
  }

  async stats(): Promise<TaskStats> {
    return statsFromCounts(this.all('SELECT status, count(*) AS n FROM tasks GROUP BY status'));
  }

  // Workers ------------------------------------------------------------------------------------

  async claimTask(worker: string, leaseMs: number, now: Date): Promise<Claim | undefined> {
    return this.write((): Claim | undefined => {
      const row = this.one(
        "SELECT id FROM tasks WHERE status = 'pending' ORDER BY priority DESC, id ASC LIMIT 1",
      );
      if (row === undefined) return undefined;
      const taskId = num(row['id']);
      const at = iso(now);
      const runId = num(
        this.run(
          "INSERT INTO runs (task_id, status, worker, steps, started_at, lease_expires_at) VALUES (?, 'running', ?, 0, ?, ?)",
          taskId,
          worker,
          at,
          leaseUntil(now, leaseMs),
        ).lastInsertRowid,
      );
      this.run(
        "UPDATE tasks SET status = 'running', attempts = attempts + 1, run_id = ?, updated_at = ? WHERE id = ?",
        runId,
        at,
        taskId,
      );
      this.insertLog(taskId, runId, 'info', messages.runStarted(runId, worker), now);
      return { task: this.task(taskId), run: this.runRecord(runId) };
    });
  }

  async renewLease(runId: number, worker: string, leaseMs: number, now: Date): Promise<LeaseState> {
    return this.write((): LeaseState => {
      const hold = this.hold(runId, worker);
      if (hold === undefined) return 'lost';
      this.run('UPDATE runs SET lease_expires_at = ? WHERE id = ?', leaseUntil(now, leaseMs), runId);
      return hold.task_status === 'cancelled' ? 'cancelled' : 'ok';
    });
  }

  async finishRun(runId: number, worker: string, outcome: RunOutcome, now: Date): Promise<boolean> {
    return this.write((): boolean => {
      const hold = this.hold(runId, worker);
      if (hold === undefined) return false;
      const at = iso(now);
      const output = storableOrNull(outcome.output);
      this.run(
        `UPDATE runs SET status = ?, output = ?, error = ?, steps = ?, finished_at = ?, lease_expires_at = NULL
         WHERE id = ?`,
        outcome.status,
        output,
        storableOrNull(outcome.error),
        outcome.steps,
        at,
        runId,
      );
      const status: TaskStatus = hold.task_status === 'cancelled' ? 'cancelled' : outcome.status;
      const result = outcome.status === 'done' ? output : hold.task_result;
      this.run(
        'UPDATE tasks SET status = ?, result = ?, updated_at = ? WHERE id = ?',
        status,
        result,
        at,
        hold.task_id,
      );
      return true;
    });
  }

  async releaseRun(runId: number, worker: string, reason: string, now: Date): Promise<boolean> {
    return this.write((): boolean => {
      const hold = this.hold(runId, worker);
      if (hold === undefined) return false;
      const at = iso(now);
      const cancelled = hold.task_status === 'cancelled';
      this.run(
        'UPDATE runs SET status = ?, error = ?, finished_at = ?, lease_expires_at = NULL WHERE id = ?',
        cancelled ? 'cancelled' : 'failed',
        storable(messages.notStarted(reason)),
        at,
        runId,
      );
      if (!cancelled) {
        this.run(
          "UPDATE tasks SET status = 'pending', attempts = max(attempts - 1, 0), updated_at = ? WHERE id = ?",
          at,
          hold.task_id,
        );
      }
      this.insertLog(hold.task_id, runId, 'warn', messages.released(runId, reason, cancelled), now);
      return true;
    });
  }

  async recoverExpired(maxAttempts: number, now: Date): Promise<Recovered[]> {
    return this.write((): Recovered[] => {
      const at = iso(now);
      const expired = this.all(
        `SELECT r.id, r.worker, r.lease_expires_at, r.task_id, t.status AS task_status, t.attempts,
                t.run_id AS current_run
         FROM runs r JOIN tasks t ON t.id = r.task_id
         WHERE r.status = 'running' AND r.lease_expires_at < ?
         ORDER BY r.id`,
        at,
      );
      const recovered: Recovered[] = [];
      for (const row of expired) {
        const runId = num(row['id']);
        const taskId = num(row['task_id']);
        const leaseError = messages.leaseExpired(iso(row['lease_expires_at']), String(row['worker']));
        const endRun = (status: 'failed' | 'cancelled'): void => {
          this.run(
            'UPDATE runs SET status = ?, error = ?, finished_at = ?, lease_expires_at = NULL WHERE id = ?',
            status,
            leaseError,
            at,
            runId,
          );
        };
        if (numOrNull(row['current_run']) !== runId) {
          // Not its task's run any more (the task moved on); only the run needs ending.
          endRun('failed');
          continue;
        }
        if (row['task_status'] === 'cancelled') {
          endRun('cancelled');
          this.insertLog(taskId, runId, 'warn', messages.recoveredCancelled(runId, leaseError), now);
          continue;
        }
        const attempts = num(row['attempts']);
        const action = attempts < maxAttempts ? 'retried' : 'failed';
        endRun('failed');
        this.run(
          'UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?',
          action === 'retried' ? 'pending' : 'failed',
          at,
          taskId,
        );
        this.insertLog(
          taskId,
          runId,
          'error',
          messages.recovered(runId, leaseError, action, attempts, maxAttempts),
          now,
        );
        recovered.push({ task: this.task(taskId), run: this.runRecord(runId), action });
      }
      return recovered;
    });
  }

  // Logs and runs ------------------------------------------------------------------------------

  async addLog(
    taskId: number,
    runId: number | null,
    level: LogLevel,
    message: string,
    now: Date,
  ): Promise<TaskLog> {
    return this.write(() => {
      if (this.taskRow(taskId) === undefined) throw new UnknownTaskError(taskId);
      return this.insertLog(taskId, runId, level, message, now);
    });
  }

  async listLogs(filter: { taskId?: number; limit: number }): Promise<TaskLog[]> {
    const rows =
      filter.taskId === undefined
        ? this.all('SELECT * FROM logs ORDER BY id DESC LIMIT ?', filter.limit)
        : this.all(
            'SELECT * FROM logs WHERE task_id = ? ORDER BY id DESC LIMIT ?',
            filter.taskId,
            filter.limit,
          );
    return rows.map(logFromRow);
  }

  async listRuns(filter: { taskId?: number; limit: number }): Promise<Run[]> {
    const rows =
      filter.taskId === undefined
        ? this.all('SELECT * FROM runs ORDER BY id DESC LIMIT ?', filter.limit)
        : this.all(
            'SELECT * FROM runs WHERE task_id = ? ORDER BY id DESC LIMIT ?',
            filter.taskId,
            filter.limit,
          );
    return rows.map(runFromRow);
  }

  // Schedules ----------------------------------------------------------------------------------

  async createSchedule(input: NewSchedule, nextRun: NextRun, now: Date): Promise<Schedule> {
    const next = input.enabled ? nextRun(input.cron, input.timezone, now) : null;
    return this.write(() => {
      const at = iso(now);
      const id = num(
        this.run(
          `INSERT INTO schedules (name, cron, timezone, title, description, priority, enabled, next_run_at,
                                  created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          storable(input.name),
          storable(input.cron),
          storable(input.timezone),
          storable(input.title),
          storable(input.description),
          input.priority,
          input.enabled ? 1 : 0,
          next === null ? null : iso(next),
          at,
          at,
        ).lastInsertRowid,
      );
      return this.schedule(id);
    });
  }

  async listSchedules(): Promise<Schedule[]> {
    return this.all('SELECT * FROM schedules ORDER BY id DESC').map(scheduleFromRow);
  }

  async getSchedule(id: number): Promise<Schedule | undefined> {
    const row = this.one('SELECT * FROM schedules WHERE id = ?', id);
    return row === undefined ? undefined : scheduleFromRow(row);
  }

  async setScheduleEnabled(
    id: number,
    enabled: boolean,
    nextRun: NextRun,
    now: Date,
  ): Promise<Schedule | undefined> {
    return this.write((): Schedule | undefined => {
      const row = this.one('SELECT * FROM schedules WHERE id = ?', id);
      if (row === undefined) return undefined;
      const current = scheduleFromRow(row);
      const next = enabled ? nextRun(current.cron, current.timezone, now) : null;
      this.run(
        'UPDATE schedules SET enabled = ?, next_run_at = ?, updated_at = ? WHERE id = ?',
        enabled ? 1 : 0,
        next === null ? null : iso(next),
        iso(now),
        id,
      );
      return this.schedule(id);
    });
  }

  async deleteSchedule(id: number): Promise<boolean> {
    return this.write(() => this.run('DELETE FROM schedules WHERE id = ?', id).changes > 0);
  }

  async fireDueSchedules(nextRun: NextRun, now: Date): Promise<{ schedule: Schedule; task: Task }[]> {
    return this.write(() => {
      const at = iso(now);
      const due = this.all(
        'SELECT * FROM schedules WHERE enabled = 1 AND next_run_at <= ? ORDER BY next_run_at, id',
        at,
      ).map(scheduleFromRow);
      return due.map((s) => {
        const task = this.insertTask(
          { title: s.title, description: s.description, priority: s.priority, scheduleId: s.id },
          now,
        );
        this.insertLog(task.id, null, 'info', messages.createdBySchedule(s.name), now);
        const next = nextRun(s.cron, s.timezone, now);
        this.run(
          'UPDATE schedules SET last_run_at = ?, last_task_id = ?, next_run_at = ?, updated_at = ? WHERE id = ?',
          at,
          task.id,
          next === null ? null : iso(next),
          at,
          s.id,
        );
        return { schedule: this.schedule(s.id), task };
      });
    });
  }

  // Skills -------------------------------------------------------------------------------------

  async saveSkills(skills: readonly SkillEntry[]): Promise<void> {
    this.write(() => {
      this.run('DELETE FROM skills');
      skills.forEach((s, position) => {
        this.run(
          'INSERT INTO skills (position, name, description, input_schema, service) VALUES (?, ?, ?, ?, ?)',
          position,
          s.name,
          s.description,
          JSON.stringify(s.input_schema),
          s.service,
        );
      });
    });
  }

  async listSkills(): Promise<SkillEntry[]> {
    return this.all('SELECT * FROM skills ORDER BY position').map(skillFromRow);
  }

  // Chat ---------------------------------------------------------------------------------------

  async appendChat(
    sessionId: string,
    chat: readonly Omit<ChatMessage, 'created_at'>[],
    now: Date,
  ): Promise<void> {
    if (chat.length === 0) return;
    this.write(() => {
      for (const m of chat) {
        this.run(
          'INSERT INTO chat_messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)',
          sessionId,
          m.role,
          storable(m.content),
          iso(now),
        );
      }
    });
  }

  async chatHistory(sessionId: string, limit: number): Promise<ChatMessage[]> {
    return this.all(
      `SELECT * FROM (SELECT * FROM chat_messages WHERE session_id = ? ORDER BY id DESC LIMIT ?)
       ORDER BY id ASC`,
      sessionId,
      limit,
    ).map(chatFromRow);
  }

  async clearChat(sessionId: string): Promise<boolean> {
    return this.write(
      () => this.run('DELETE FROM chat_messages WHERE session_id = ?', sessionId).changes > 0,
    );
  }

  // Helpers ------------------------------------------------------------------------------------

  /** One write transaction, taking the database's write lock at BEGIN (waits up to busy_timeout). */
  private write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private one(sql: string, ...params: unknown[]): Row | undefined {
    return this.statement(sql).get(...params) as Row | undefined;
  }

  private all(sql: string, ...params: unknown[]): Row[] {
    return this.statement(sql).all(...params) as Row[];
  }

  private run(sql: string, ...params: unknown[]): Database.RunResult {
    return this.statement(sql).run(...params);
  }

  private userVersion(): number {
    return num(this.db.pragma('user_version', { simple: true }));
  }

  private newerSchema(found: number): Error {
    return new Error(
      `${this.path} has task agent schema version ${String(found)}, newer than this program's ` +
        `${String(SQLITE_SCHEMA_VERSION)}: run the newer task agent (or proxy) release`,
    );
  }

  private taskRow(id: number): Row | undefined {
    return this.one('SELECT * FROM tasks WHERE id = ?', id);
  }

  private task(id: number): Task {
    const row = this.taskRow(id);
    if (row === undefined) throw new UnknownTaskError(id);
    return taskFromRow(row);
  }

  private runRecord(id: number): Run {
    const row = this.one('SELECT * FROM runs WHERE id = ?', id);
    if (row === undefined) throw new Error(`run ${String(id)} vanished`);
    return runFromRow(row);
  }

  private schedule(id: number): Schedule {
    const row = this.one('SELECT * FROM schedules WHERE id = ?', id);
    if (row === undefined) throw new Error(`schedule ${String(id)} vanished`);
    return scheduleFromRow(row);
  }

  /** The run, when `worker` still holds it: running, its worker's, and its task's current run. */
  private hold(runId: number, worker: string): RunHold | undefined {
    const row = this.one(
      `SELECT r.status, r.worker, r.task_id, t.status AS task_status, t.result AS task_result,
              t.run_id AS current_run
       FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?`,
      runId,
    ) as RunHold | undefined;
    if (row?.status !== 'running' || row.worker !== worker || row.current_run !== runId) return undefined;
    return row;
  }

  private insertTask(input: NewTask, now: Date): Task {
    const at = iso(now);
    const id = num(
      this.run(
        `INSERT INTO tasks (title, description, priority, status, attempts, schedule_id, created_at, updated_at)
         VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)`,
        storable(input.title),
        storable(input.description),
        input.priority,
        input.scheduleId ?? null,
        at,
        at,
      ).lastInsertRowid,
    );
    return this.task(id);
  }

  private insertLog(
    taskId: number,
    runId: number | null,
    level: LogLevel,
    message: string,
    now: Date,
  ): TaskLog {
    const id = num(
      this.run(
        'INSERT INTO logs (task_id, run_id, level, message, created_at) VALUES (?, ?, ?, ?, ?)',
        taskId,
        runId,
        level,
        storable(message),
        iso(now),
      ).lastInsertRowid,
    );
    const row = this.one('SELECT * FROM logs WHERE id = ?', id);
    if (row === undefined) throw new Error(`log ${String(id)} vanished`);
    return logFromRow(row);
  }
}
