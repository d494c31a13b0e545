import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { PostgresTaskStore } from '../../services/task-agent/src/store/postgres-store.js';
import { SqliteTaskStore } from '../../services/task-agent/src/store/sqlite-store.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import {
  RUNNABLE_KINDS,
  TestDatabases,
  at,
  compileStoreChild,
  runChildrenTogether,
  testNextRun,
  type StoreKind,
  type TestDatabase,
} from './store-helpers.js';

// Several workers claiming from one queue at the same moment: every task is claimed exactly once.
// SQLite: separate processes on one file (each its own connection and write lock, as the agent and
// the task proxy are); PostgreSQL: separate stores (pools) in this process, whose queries really
// run at once on the server. Then schedulers of several replicas firing the same due schedules,
// and replicas creating the schema at the same moment.

const TASKS = 50;
const WORKERS = 4;
const SCHEDULES = 5;
/** A worker's pause after each claim (it runs the task), so that claims interleave. */
const WORK_MS = 5;

const dbs = new TestDatabases();
let child: { program: string; dir: string };
beforeAll(async () => {
  child = compileStoreChild();
  await dbs.start();
}, 120_000);
afterEach(() => dbs.closeStores());
afterAll(async () => {
  await dbs.stop();
  rmSync(child.dir, { recursive: true, force: true });
});

async function queue(db: TestDatabase): Promise<TaskStore> {
  const store = await db.open();
  for (let i = 0; i < TASKS; i++) {
    await store.createTask({ title: `t${i}`, description: '', priority: 1 + (i % 10) }, at(i));
  }
  return store;
}

/** Each worker's claimed ids, claimed at once by WORKERS workers of `kind`. */
async function claimTogether(kind: StoreKind, db: TestDatabase): Promise<number[][]> {
  if (kind === 'sqlite') {
    return runChildrenTogether(
      child.program,
      Array.from({ length: WORKERS }, (_, w) => ['claim', db.location, `worker-${w}`, String(WORK_MS)]),
    );
  }
  // Two claim loops on each of WORKERS stores: 8 claimers on 4 pools.
  const stores = await Promise.all(Array.from({ length: WORKERS }, () => db.open()));
  const loop = async (store: TaskStore, worker: string): Promise<number[]> => {
    const claimed: number[] = [];
    for (;;) {
      const claim = await store.claimTask(worker, 60_000, new Date());
      if (claim === undefined) return claimed;
      claimed.push(claim.task.id);
      await new Promise((resolve) => setTimeout(resolve, WORK_MS));
    }
  };
  return Promise.all(stores.flatMap((s, w) => [loop(s, `worker-${w}/a`), loop(s, `worker-${w}/b`)]));
}

async function fireTogether(kind: StoreKind, db: TestDatabase, now: Date): Promise<number[][]> {
  if (kind === 'sqlite') {
    return runChildrenTogether(
      child.program,
      Array.from({ length: 3 }, () => ['fire', db.location, now.toISOString()]),
    );
  }
  const stores = await Promise.all(Array.from({ length: 3 }, () => db.open()));
  return Promise.all(
    stores.map(async (s) => (await s.fireDueSchedules(testNextRun, now)).map((f) => f.task.id)),
  );
}

describe.each(RUNNABLE_KINDS)('%s store under concurrent workers', (kind) => {
  it(`claims each of ${TASKS} tasks exactly once with ${WORKERS} workers at once`, async () => {
    const db = dbs.database(kind);
    const store = await queue(db);
    const claimed = await claimTogether(kind, db);

    const all = claimed.flat().sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: TASKS }, (_, i) => i + 1));
    // The workers really competed (a worker starting late may find the queue empty).
    expect(claimed.filter((c) => c.length > 0).length).toBeGreaterThan(1);

    const tasks = await store.listTasks({ limit: 1000 });
    expect(tasks.every((t) => t.status === 'running' && t.attempts === 1)).toBe(true);
    const runs = await store.listRuns({ limit: 1000 });
    expect(runs).toHaveLength(TASKS);
    expect(new Set(runs.map((r) => r.task_id)).size).toBe(TASKS);
    expect(await store.stats()).toMatchObject({ total: TASKS, running: TASKS, pending: 0 });
  }, 60_000);

  it('fires a due schedule once when several schedulers fire it at once', async () => {
    const db = dbs.database(kind);
    const store = await db.open();
    for (let i = 0; i < SCHEDULES; i++) {
      const schedule = {
        name: `s${i}`,
        cron: '0 * * * *',
        timezone: 'UTC',
        title: `from s${i}`,
        description: '',
        priority: 5,
        enabled: true,
      };
      await store.createSchedule(schedule, testNextRun, at(0)); // next: 11:00
    }
    for (const hour of [11, 12]) {
      const now = new Date(`2026-11-22T${String(hour)}:00:00.000Z`);
      const fired = await fireTogether(kind, db, now);
      expect(fired.flat()).toHaveLength(SCHEDULES);
      const schedules = await store.listSchedules();
      expect(schedules.map((s) => s.next_run_at)).toEqual(
        Array(SCHEDULES).fill(`2026-11-22T${String(hour + 1)}:00:00.000Z`),
      );
      expect(new Set(schedules.map((s) => s.last_task_id)).size).toBe(SCHEDULES);
    }
    const tasks = await store.listTasks({ limit: 1000 });
    expect(tasks).toHaveLength(2 * SCHEDULES);
    expect(new Set(tasks.map((t) => `${String(t.schedule_id)}@${t.created_at}`)).size).toBe(2 * SCHEDULES);
  }, 60_000);

  it('creates the schema once when several replicas start at the same moment', async () => {
    const db = dbs.database(kind);
    let created: number[][];
    if (kind === 'sqlite') {
      const file = join(`${db.location}.d`, 'fresh.db'); // neither the file nor its directory exist yet
      created = await runChildrenTogether(
        child.program,
        Array.from({ length: 3 }, () => ['init', file]),
      );
      const reader = new SqliteTaskStore(file, { create: false });
      await reader.init();
      expect((await reader.listTasks({ limit: 10 })).map((t) => t.id).sort()).toEqual([1, 2, 3]);
      await reader.close();
    } else {
      const replicas = Array.from(
        { length: 4 },
        () => new PostgresTaskStore(db.location, { schema: db.schema ?? '' }),
      );
      try {
        await Promise.all(replicas.map((r) => r.init()));
        created = await Promise.all(
          replicas.map(async (r) => [
            (await r.createTask({ title: 'x', description: '', priority: 5 }, at(0))).id,
          ]),
        );
      } finally {
        await Promise.all(replicas.map((r) => r.close()));
      }
    }
    expect(created.flat().sort()).toEqual(Array.from({ length: created.length }, (_, i) => i + 1));
  }, 60_000);
});
