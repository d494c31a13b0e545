/**
 * The worker pool against a real SQLite store: a graceful shutdown (stop) that begins while a
 * worker's claim is still in flight (a slow store round trip) hands the claimed task back, pending
 * again with its attempt, instead of running it to its end during the shutdown.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { BodyMemory, ConcurrencyGate, createLogger, createMetrics } from '@clinicalsuite/kit';
import {
  SHUTDOWN_BEFORE_START,
  WorkerPool,
  type ExecuteTask,
  type WorkerPoolOptions,
} from '../../services/task-agent/src/adapters/workers.js';
import { createTaskAgentMetrics } from '../../services/task-agent/src/metrics.js';
import { SqliteTaskStore } from '../../services/task-agent/src/store/sqlite-store.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import { captureLogs, deferred } from '../kit/helpers.js';
import { tempSqlitePath } from './helpers.js';
import { testNextRun } from './store-helpers.js';

const opened: TaskStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

async function openStore(): Promise<TaskStore> {
  const store = new SqliteTaskStore(tempSqlitePath());
  await store.init();
  opened.push(store);
  return store;
}

function pool(
  store: TaskStore,
  execute: ExecuteTask,
  extra: Partial<WorkerPoolOptions> = {},
): { pool: WorkerPool; logs: Record<string, unknown>[] } {
  const { logs, destination } = captureLogs();
  const kit = createMetrics({
    service: 'task-agent',
    version: '0',
    gate: new ConcurrencyGate({ limit: 1, queueSize: 1, maxWaitMs: 1000 }),
    bodyMemory: new BodyMemory(1024),
    isReady: () => true,
    processMetrics: false,
  });
  const metrics = createTaskAgentMetrics(kit);
  return {
    logs,
    pool: new WorkerPool({
      store,
      execute,
      workers: 1,
      leaseMs: 30_000,
      pollMs: 20,
      tickMs: 60_000,
      runTimeoutMs: 60_000,
      maxAttempts: 3,
      nextRun: testNextRun,
      canClaim: () => true,
      logger: createLogger({ service: 'task-agent', level: 'debug', destination }),
      metrics,
      now: () => new Date(),
      ...extra,
    }),
  };
}

describe('WorkerPool.stop', () => {
  it('hands back a task whose claim completes after the shutdown began, and does not run it', async () => {
    const store = await openStore();
    const task = await store.createTask({ title: 'Summarize', description: '', priority: 5 }, new Date());
    // The claim is held in flight until the test lets it complete.
    const inClaim = deferred();
    const letClaimEnd = deferred();
    const slow: TaskStore = Object.create(store) as TaskStore;
    slow.claimTask = async (...args) => {
      inClaim.resolve();
      await letClaimEnd.promise;
      return store.claimTask(...args);
    };
    let executed = 0;
    const { pool: workers, logs } = pool(slow, async (_task, signal) => {
      executed += 1;
      // A run that ends when it is told to stop (or soon, when nothing tells it).
      await new Promise((resolve) => {
        signal.addEventListener('abort', resolve, { once: true });
        setTimeout(resolve, 300);
      });
      return { status: 'done', output: 'ran during the shutdown', steps: 1 };
    });
    workers.start();
    await inClaim.promise;
    const stopped = workers.stop();
    letClaimEnd.resolve();
    await stopped;

    expect(executed).toBe(0);
    expect(await store.getTask(task.id)).toMatchObject({ status: 'pending', attempts: 0 });
    const runs = await store.listRuns({ taskId: task.id, limit: 5 });
    expect(runs).toEqual([
      expect.objectContaining({ status: 'failed', error: `not started: ${SHUTDOWN_BEFORE_START}` }),
    ]);
    const messages = (await store.listLogs({ taskId: task.id, limit: 5 })).map((l) => l.message);
    expect(messages[0]).toBe(
      `run ${runs[0]?.id} handed back before it started (${SHUTDOWN_BEFORE_START}); the task is pending again`,
    );
    expect(logs.some((l) => l['msg'] === 'claim handed back: shutting down')).toBe(true);
  });

  it('interrupts a run in progress and leaves its lease to expire', async () => {
    const store = await openStore();
    const task = await store.createTask({ title: 'Summarize', description: '', priority: 5 }, new Date());
    const running = deferred();
    const { pool: workers } = pool(store, async (_task, signal) => {
      running.resolve();
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw signal.reason as Error;
    });
    workers.start();
    await running.promise;
    await workers.stop();
    expect(await store.getTask(task.id)).toMatchObject({ status: 'running', attempts: 1 });
    const messages = (await store.listLogs({ taskId: task.id, limit: 1 })).map((l) => l.message);
    expect(messages[0]).toMatch(
      /interrupted: the task agent shut down; the task is taken over when its lease expires/,
    );
  });
});

describe('the retention sweep (TASK_AGENT_RETENTION_DAYS)', () => {
  it('deletes finished tasks past the retention with their runs and logs, keeps newer and unfinished ones', async () => {
    const store = await openStore();
    const day = 86_400_000;
    const t0 = new Date('2026-01-01T00:00:00Z');
    const old = await store.createTask({ title: 'old', description: 'patient note', priority: 5 }, t0);
    const claim = await store.claimTask('w', 30_000, t0);
    await store.finishRun(claim!.run.id, 'w', { status: 'done', output: 'answer', steps: 1 }, t0);
    const oldPending = await store.createTask({ title: 'old, pending', description: '', priority: 1 }, t0);
    const recent = await store.createTask(
      { title: 'recent', description: '', priority: 1 },
      new Date(t0.getTime() + 9 * day),
    );
    await store.cancelTask(recent.id, 'test', new Date(t0.getTime() + 9 * day));
    const noop: ExecuteTask = () => Promise.reject(new Error('not run'));
    const { pool: p, logs } = pool(store, noop, {
      retentionMs: 7 * day,
      now: () => new Date(t0.getTime() + 10 * day),
      workers: 0,
    });
    await p.tick();
    expect(await store.getTask(old.id)).toBeUndefined();
    expect(await store.listRuns({ limit: 10 })).toEqual([]);
    expect((await store.listLogs({ limit: 100 })).filter((l) => l.task_id === old.id)).toEqual([]);
    expect((await store.getTask(oldPending.id))?.status).toBe('pending'); // unfinished: kept
    expect((await store.getTask(recent.id))?.status).toBe('cancelled'); // within the retention: kept
    expect(logs.find((l) => l['msg'] === 'deleted finished tasks past their retention')).toMatchObject({
      deleted: 1,
      before: '2026-01-04T00:00:00.000Z',
    });
    await p.stop();
  });

  it('keeps everything when the retention is 0', async () => {
    const store = await openStore();
    const t0 = new Date('2026-01-01T00:00:00Z');
    const task = await store.createTask({ title: 'kept', description: '', priority: 5 }, t0);
    await store.cancelTask(task.id, 'test', t0);
    const { pool: p } = pool(store, () => Promise.reject(new Error('not run')), {
      retentionMs: 0,
      now: () => new Date('2036-01-01T00:00:00Z'),
      workers: 0,
    });
    await p.tick();
    expect((await store.getTask(task.id))?.status).toBe('cancelled');
    await p.stop();
  });
});
