import type {
  ChatMessage,
  LogLevel,
  Run,
  RunStatus,
  Schedule,
  SkillEntry,
  Task,
  TaskLog,
  TaskStats,
  TaskStatus,
} from '../domain/types.js';

/**
 * Where tasks, runs, logs, schedules, the skill catalogue and chat histories live: SQLite (WAL, one
 * file on the service's volume) by default, PostgreSQL (`DATABASE_URL`) for several replicas. Both
 * implement this interface with the same semantics and produce byte-identical records, so the task
 * proxy can answer from the store (offline) exactly what the agent answers (online).
 *
 * Every method takes `now` (the caller's clock) so tests control time; every write is one
 * transaction. Lists are newest first (by id), `limit` is applied by the store. Free text is
 * stored without NUL characters, which PostgreSQL's `text` can not hold (`storable` in sql.ts).
 */

export interface NewTask {
  readonly title: string;
  readonly description: string;
  readonly priority: number;
  readonly scheduleId?: number | null;
}

export interface NewSchedule {
  readonly name: string;
  readonly cron: string;
  readonly timezone: string;
  readonly title: string;
  readonly description: string;
  readonly priority: number;
  readonly enabled: boolean;
}

/** Computes a schedule's next firing strictly after `after`, or null when it never fires again. */
export type NextRun = (cron: string, timezone: string, after: Date) => Date | null;

export interface Claim {
  readonly task: Task;
  readonly run: Run;
}

/** What a lease renewal found. */
export type LeaseState =
  /** Still ours; the lease now runs to now + leaseMs. */
  | 'ok'
  /** The task was cancelled (by the API or the proxy): stop the run. */
  | 'cancelled'
  /** Not ours any more (the lease expired and was recovered elsewhere): stop, write nothing. */
  | 'lost';

export interface RunOutcome {
  readonly status: Exclude<RunStatus, 'running'>;
  readonly output?: string | null;
  readonly error?: string | null;
  /** Plan-and-act steps taken. */
  readonly steps: number;
}

export interface Recovered {
  readonly task: Task;
  /** The interrupted run, now `failed` with an error naming the expired lease. */
  readonly run: Run;
  /** `retried`: the task is pending again; `failed`: it had used its attempts. */
  readonly action: 'retried' | 'failed';
}

export type DeleteTaskResult = 'deleted' | 'active' | 'not_found';

export interface CancelResult {
  /** False when the task was already done, failed or cancelled. */
  readonly cancelled: boolean;
  /** The task after the call (undefined: no such task). */
  readonly task: Task | undefined;
  /** Its status before the call. */
  readonly previous: TaskStatus | undefined;
}

export interface TaskStore {
  /** `sqlite` or `postgresql`, for /status. */
  readonly kind: 'sqlite' | 'postgresql';
  /** Creates or migrates the schema (idempotent; safe with several replicas starting at once). */
  init(): Promise<void>;
  close(): Promise<void>;
  /** Whether the database answers (readiness). */
  ping(): Promise<boolean>;

  // Tasks ------------------------------------------------------------------------------------
  createTask(input: NewTask, now: Date): Promise<Task>;
  getTask(id: number): Promise<Task | undefined>;
  /** Newest first; `status` is a stored status (callers map group names with `statusGroup`). */
  listTasks(filter: { status?: TaskStatus; limit: number }): Promise<Task[]>;
  /**
   * pending or running → cancelled, with an info log "cancelled by <by>". A running task's run is
   * ended by its worker (it sees `cancelled` at its next lease renewal or step); a run whose worker
   * is gone is ended by `recoverExpired`.
   */
  cancelTask(id: number, by: string, now: Date): Promise<CancelResult>;
  /**
   * A finished task (done, failed, cancelled) → pending again, for a new run; attempts reset to 0.
   * Undefined when there is no such task; the task unchanged (not pending) when it was not finished.
   */
  requeueTask(id: number, now: Date): Promise<Task | undefined>;
  /**
   * Deletes a finished task (done, failed, cancelled) with its runs and logs, for good: `deleted`;
   * `active` (nothing deleted) while it is pending or running (cancel it first); `not_found`.
   */
  deleteTask(id: number): Promise<DeleteTaskResult>;
  /**
   * Deletes up to `limit` finished tasks (done, failed, cancelled) last updated before `cutoff`,
   * oldest first, with their runs and logs (the retention sweep). Returns how many went.
   */
  deleteFinishedBefore(cutoff: Date, limit: number): Promise<number>;
  stats(): Promise<TaskStats>;

  // Workers ----------------------------------------------------------------------------------
  /**
   * Takes the most urgent pending task (priority desc, then id asc) for `worker`: task → running,
   * attempts + 1, a new run (running), a lease until now + leaseMs, an info log "run N started by
   * <worker>". Atomic across processes and replicas: a task is never claimed twice at once
   * (SQLite: one immediate transaction; PostgreSQL: `FOR UPDATE SKIP LOCKED`).
   */
  claimTask(worker: string, leaseMs: number, now: Date): Promise<Claim | undefined>;
  /** Extends the run's lease, and says whether the run should go on. */
  renewLease(runId: number, worker: string, leaseMs: number, now: Date): Promise<LeaseState>;
  /**
   * Ends the run (status, output, error, steps, finished_at) and its task, if `worker` still holds
   * it: done → task done with `result` = output; failed → task failed; cancelled → task stays
   * cancelled. Returns false (and writes nothing) when the lease was lost.
   */
  finishRun(runId: number, worker: string, outcome: RunOutcome, now: Date): Promise<boolean>;
  /**
   * Hands back a run claimed but never started (the agent began shutting down while the claim was
   * in flight), if `worker` still holds it: the run → failed (error "not started: <reason>"), the task →
   * pending with the claim's attempt given back (it did not run), and a warn log saying so. A task
   * cancelled meanwhile stays cancelled and the run ends `cancelled`. Returns false (and writes
   * nothing) when the lease was lost.
   */
  releaseRun(runId: number, worker: string, reason: string, now: Date): Promise<boolean>;
  /**
   * Running tasks whose lease expired before `now` (their worker died or hung): the run → failed
   * with error "lease expired at <time>: worker <w> stopped without finishing", an error log saying
   * so, and the task → pending (another run) while attempts < maxAttempts, else → failed. A task
   * cancelled while its worker was gone keeps `cancelled` and its run ends `cancelled`.
   */
  recoverExpired(maxAttempts: number, now: Date): Promise<Recovered[]>;

  // Logs and runs ----------------------------------------------------------------------------
  addLog(taskId: number, runId: number | null, level: LogLevel, message: string, now: Date): Promise<TaskLog>;
  listLogs(filter: { taskId?: number; limit: number }): Promise<TaskLog[]>;
  listRuns(filter: { taskId?: number; limit: number }): Promise<Run[]>;

  // Schedules --------------------------------------------------------------------------------
  createSchedule(input: NewSchedule, nextRun: NextRun, now: Date): Promise<Schedule>;
  listSchedules(): Promise<Schedule[]>;
  getSchedule(id: number): Promise<Schedule | undefined>;
  /** Enables or disables; next_run_at recomputed from now (or null when disabled). */
  setScheduleEnabled(
    id: number,
    enabled: boolean,
    nextRun: NextRun,
    now: Date,
  ): Promise<Schedule | undefined>;
  deleteSchedule(id: number): Promise<boolean>;
  /**
   * Fires every enabled schedule whose next_run_at <= now: creates its task (pending, with an info
   * log "created by schedule <name>"), sets last_run_at, last_task_id and the next firing after
   * now (a firing missed while the agent was down fires once, not once per missed slot). Atomic
   * per schedule across replicas: a slot fires once.
   */
  fireDueSchedules(nextRun: NextRun, now: Date): Promise<{ schedule: Schedule; task: Task }[]>;

  // Skills -----------------------------------------------------------------------------------
  /** Replaces the stored skill catalogue (the agent writes its own at start, for offline answers). */
  saveSkills(skills: readonly SkillEntry[]): Promise<void>;
  listSkills(): Promise<SkillEntry[]>;

  // Chat -------------------------------------------------------------------------------------
  appendChat(
    sessionId: string,
    messages: readonly Omit<ChatMessage, 'created_at'>[],
    now: Date,
  ): Promise<void>;
  /** Oldest first, the last `limit` messages. */
  chatHistory(sessionId: string, limit: number): Promise<ChatMessage[]>;
  /** Whether the session had any message. */
  clearChat(sessionId: string): Promise<boolean>;
}
