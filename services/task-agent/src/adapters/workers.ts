import { hostname } from 'node:os';
import type { Logger } from '@clinicalsuite/kit';
import type { RunResult } from '../domain/plan-act.js';
import type { LogLevel, Task } from '../domain/types.js';
import type { TaskAgentMetrics } from '../metrics.js';
import type { Claim, NextRun, TaskStore } from '../store/types.js';

/**
 * The workers of one replica and its background tick. A worker claims the most urgent pending task
 * (the store makes the claim exclusive across replicas), runs it while renewing its lease every
 * third of the lease, and ends the run. Cancellation reaches a run three ways: at once when the
 * cancel came through this replica, at the next lease renewal when it came through another replica
 * or the proxy's store, and between steps. The tick fires due schedules and recovers runs whose
 * worker died (expired leases).
 */

/** Why a run claimed while the agent began shutting down is handed back unstarted. */
export const SHUTDOWN_BEFORE_START = 'the task agent shut down';

/** Why a run's signal was aborted. */
export class RunStopped extends Error {
  constructor(
    readonly kind: 'cancelled' | 'timeout' | 'lost' | 'shutdown',
    message: string,
  ) {
    super(message);
  }
}

export type ExecuteTask = (
  task: Task,
  signal: AbortSignal,
  log: (level: LogLevel, message: string) => Promise<void>,
) => Promise<RunResult>;

export interface WorkerPoolOptions {
  readonly store: TaskStore;
  readonly execute: ExecuteTask;
  readonly workers: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly tickMs: number;
  readonly runTimeoutMs: number;
  readonly maxAttempts: number;
  readonly nextRun: NextRun;
  /** Whether runs can make progress (the LLM answers); workers do not claim while it says no. */
  readonly canClaim: () => boolean;
  readonly logger: Logger;
  readonly metrics: TaskAgentMetrics;
  readonly now: () => Date;
  /** Finished tasks older than this (ms since they last changed) are deleted by the tick; 0 or absent keeps them. */
  readonly retentionMs?: number;
}

/** How often the tick sweeps for expired tasks, and how many it deletes at most each time. */
const RETENTION_SWEEP_MS = 60_000;
const RETENTION_BATCH = 500;

interface Active {
  readonly claim: Claim;
  readonly controller: AbortController;
}

let poolCount = 0;

export class WorkerPool {
  private readonly active = new Map<number, Active>();
  private readonly loops: Promise<void>[] = [];
  private wakeUp: (() => void)[] = [];
  private stopping = false;
  private tickTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private lastStats: Awaited<ReturnType<TaskStore['stats']>> | undefined;
  private lastSweep = Number.NEGATIVE_INFINITY;
  private readonly idPrefix: string;

  constructor(private readonly options: WorkerPoolOptions) {
    poolCount += 1;
    this.idPrefix = `${hostname()}/${process.pid}/${poolCount}`;
  }

  get busy(): number {
    return this.active.size;
  }

  get stats(): Awaited<ReturnType<TaskStore['stats']>> | undefined {
    return this.lastStats;
  }

  start(): void {
    for (let i = 1; i <= this.options.workers; i++) this.loops.push(this.loop(`${this.idPrefix}/w${i}`));
    void this.tick();
  }

  /** A task was queued: idle workers look now rather than at their next poll. */
  wake(): void {
    const waiting = this.wakeUp;
    this.wakeUp = [];
    for (const w of waiting) w();
  }

  /** Stops the run of `taskId` at once if this replica runs it. */
  cancelLocal(taskId: number, by: string): boolean {
    for (const a of this.active.values()) {
      if (a.claim.task.id === taskId) {
        a.controller.abort(new RunStopped('cancelled', `cancelled by ${by}`));
        return true;
      }
    }
    return false;
  }

  /** Runs the tick now (tests; and after a restart). */
  tick(): Promise<void> {
    this.ticking ??= this.doTick().finally(() => {
      this.ticking = undefined;
      if (this.stopping) return;
      this.tickTimer = setTimeout(() => void this.tick(), this.options.tickMs);
      this.tickTimer.unref();
    });
    return this.ticking;
  }

  /**
   * Stops claiming and interrupts the runs in progress, logging why; a claim still in flight is
   * handed back when it completes (its task pending again, not run). Their leases are left to
   * expire: then a restart or another replica recovers them like the runs of a worker that died
   * (the run failed, naming the lease; the task queued again while it has attempts left), so a task
   * interrupted by shutdowns again and again still ends after TASK_AGENT_MAX_ATTEMPTS runs.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.tickTimer !== undefined) clearTimeout(this.tickTimer);
    this.wake();
    for (const a of this.active.values())
      a.controller.abort(new RunStopped('shutdown', 'interrupted: the task agent shut down'));
    await Promise.all(this.loops);
    await this.ticking;
  }

  private async doTick(): Promise<void> {
    const { store, logger, metrics, now } = this.options;
    try {
      const recovered = await store.recoverExpired(this.options.maxAttempts, now());
      for (const r of recovered) {
        metrics.leasesRecovered.inc({ action: r.action });
        logger.warn(
          { task: r.task.id, run: r.run.id, action: r.action },
          'recovered a run whose worker stopped',
        );
      }
      const fired = await store.fireDueSchedules(this.options.nextRun, now());
      for (const f of fired) {
        metrics.schedulesFired.inc();
        metrics.tasksCreated.inc({ source: 'schedule' });
        logger.info({ schedule: f.schedule.id, task: f.task.id }, 'schedule fired');
      }
      if (recovered.some((r) => r.action === 'retried') || fired.length > 0) this.wake();
      await this.sweep();
      this.lastStats = await store.stats();
    } catch (error) {
      metrics.storeErrors.inc({ operation: 'tick' });
      logger.error({ err: error }, 'background tick failed');
    }
  }

  /** The retention sweep: finished tasks past TASK_AGENT_RETENTION_DAYS go, with their runs and logs. */
  private async sweep(): Promise<void> {
    const { store, logger, now } = this.options;
    const retentionMs = this.options.retentionMs ?? 0;
    const at = now().getTime();
    if (retentionMs <= 0 || at - this.lastSweep < RETENTION_SWEEP_MS) return;
    this.lastSweep = at;
    const cutoff = new Date(at - retentionMs);
    let deleted = 0;
    for (;;) {
      const batch = await store.deleteFinishedBefore(cutoff, RETENTION_BATCH);
      deleted += batch;
      if (batch < RETENTION_BATCH) break;
    }
    if (deleted > 0)
      logger.info({ deleted, before: cutoff.toISOString() }, 'deleted finished tasks past their retention');
  }

  private async loop(worker: string): Promise<void> {
    const { store, logger, metrics, now } = this.options;
    while (!this.stopping) {
      let claim: Claim | undefined;
      try {
        if (this.options.canClaim()) claim = await store.claimTask(worker, this.options.leaseMs, now());
      } catch (error) {
        metrics.storeErrors.inc({ operation: 'claim' });
        logger.error({ err: error, worker }, 'claiming a task failed');
      }
      if (claim === undefined) {
        await this.idle();
        continue;
      }
      if (this.isStopping()) {
        // The claim completed after stop() began: stop() did not see this run to interrupt it,
        // so it is handed back rather than run to its end during the shutdown.
        await this.handBack(worker, claim);
        return;
      }
      await this.run(worker, claim);
    }
  }

  /** Read after an await: stop() may have begun meanwhile. */
  private isStopping(): boolean {
    return this.stopping;
  }

  /** Releases a claim that will not be run: its task is pending again at once, attempt given back. */
  private async handBack(worker: string, claim: Claim): Promise<void> {
    const { store, logger, metrics, now } = this.options;
    const { task, run } = claim;
    try {
      const released = await store.releaseRun(run.id, worker, SHUTDOWN_BEFORE_START, now());
      logger.info({ task: task.id, run: run.id, released }, 'claim handed back: shutting down');
    } catch (error) {
      metrics.storeErrors.inc({ operation: 'release' });
      logger.error(
        { err: error, task: task.id, run: run.id },
        'handing back a claim failed (its lease will expire and it will be recovered)',
      );
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.pollMs);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp.push(done);
    });
  }

  private async run(worker: string, claim: Claim): Promise<void> {
    const { store, logger, metrics, now } = this.options;
    const { task, run } = claim;
    const controller = new AbortController();
    this.active.set(run.id, { claim, controller });
    metrics.runsStarted.inc();
    const started = Date.now();
    const budget = setTimeout(() => {
      controller.abort(
        new RunStopped(
          'timeout',
          `time budget of ${this.options.runTimeoutMs / 1000} s exceeded (TASK_AGENT_RUN_TIMEOUT_S)`,
        ),
      );
    }, this.options.runTimeoutMs);
    const heartbeat = setInterval(
      () => {
        store.renewLease(run.id, worker, this.options.leaseMs, now()).then(
          (state) => {
            if (state === 'cancelled') controller.abort(new RunStopped('cancelled', 'cancelled'));
            else if (state === 'lost')
              controller.abort(
                new RunStopped('lost', 'the lease was lost: another worker took the task over'),
              );
          },
          (error: unknown) => {
            metrics.storeErrors.inc({ operation: 'renew' });
            logger.error({ err: error, task: task.id, run: run.id }, 'renewing a lease failed');
          },
        );
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
    const log = async (level: LogLevel, message: string): Promise<void> => {
      await store.addLog(task.id, run.id, level, message, now());
    };
    logger.info({ task: task.id, run: run.id, worker }, 'run started');
    let status: 'done' | 'failed' | 'cancelled' | 'lost' = 'failed';
    let steps = 0;
    try {
      let result: RunResult;
      try {
        result = await this.options.execute(task, controller.signal, log);
      } catch (error) {
        const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
        result = {
          status: 'failed',
          error: reason instanceof Error ? reason.message : String(reason),
          steps: 0,
        };
        if (reason instanceof RunStopped) {
          if (reason.kind === 'lost') {
            status = 'lost';
            logger.warn({ task: task.id, run: run.id }, 'run stopped: lease lost');
            return;
          }
          if (reason.kind === 'cancelled') {
            status = 'cancelled';
            await log('warn', `run ${run.id} stopped: ${reason.message}`);
            await this.finish(run.id, worker, { status: 'cancelled', error: reason.message, steps: 0 });
            return;
          }
          if (reason.kind === 'shutdown') {
            await log(
              'warn',
              `run ${run.id} ${reason.message}; the task is taken over when its lease expires (within ${this.options.leaseMs / 1000} s)`,
            );
            status = 'lost';
            return;
          }
        }
        if (!(reason instanceof RunStopped))
          logger.warn({ err: reason, task: task.id, run: run.id }, 'run failed with an error');
      }
      steps = result.steps;
      if (result.status === 'done') {
        status = 'done';
        await log(
          'info',
          `run ${run.id} done in ${((Date.now() - started) / 1000).toFixed(1)} s, ${result.steps} steps`,
        );
        await this.finish(run.id, worker, { status: 'done', output: result.output, steps: result.steps });
      } else {
        status = 'failed';
        await log('error', `run ${run.id} failed: ${result.error}`);
        await this.finish(run.id, worker, { status: 'failed', error: result.error, steps: result.steps });
      }
    } catch (error) {
      metrics.storeErrors.inc({ operation: 'finish' });
      logger.error(
        { err: error, task: task.id, run: run.id },
        'ending a run failed (its lease will expire and it will be recovered)',
      );
    } finally {
      clearTimeout(budget);
      clearInterval(heartbeat);
      this.active.delete(run.id);
      metrics.runsFinished.inc({ status });
      metrics.runDuration.observe({ status }, (Date.now() - started) / 1000);
      if (status === 'done' || status === 'failed') metrics.runSteps.observe(steps);
      logger.info({ task: task.id, run: run.id, status }, 'run ended');
    }
  }

  private async finish(
    runId: number,
    worker: string,
    outcome: Parameters<TaskStore['finishRun']>[2],
  ): Promise<void> {
    const ok = await this.options.store.finishRun(runId, worker, outcome, this.options.now());
    if (!ok) this.options.logger.warn({ run: runId }, 'run ended after its lease was lost: nothing written');
  }
}
