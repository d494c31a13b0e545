import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import pg from 'pg';
import { NotFoundError, ValidationError } from '@clinicalsuite/kit';
import { STATUS_NAMES, type SkillEntry, type Task } from '../../services/task-agent/src/domain/types.js';
import {
  DETAIL_LOGS_LIMIT,
  LOGS_LIMIT_DEFAULT,
  LOGS_LIMIT_MAX,
  RUNS_LIMIT_DEFAULT,
  TASKS_LIMIT_MAX,
  listTasksBody,
  logsBody,
  parsePriority,
  runsBody,
  schedulesBody,
  skillsBody,
  statsBody,
  taskDetailBody,
} from '../../services/task-agent/src/store/queries.js';
import { SqliteTaskStore } from '../../services/task-agent/src/store/sqlite-store.js';
import { UnknownTaskError } from '../../services/task-agent/src/store/sql.js';
import type { NewSchedule, NextRun, TaskStore } from '../../services/task-agent/src/store/types.js';
import {
  MINUTE,
  RUNNABLE_KINDS,
  T0,
  TestDatabases,
  at,
  testNextRun,
  type TestDatabase,
} from './store-helpers.js';

// Every TaskStore method's contract, on a real SQLite file and on a real PostgreSQL server (one
// throwaway server for the file, a schema per test), then the same script on both compared record
// for record, and the read operations' bodies (store/queries.ts) the agent and the proxy share.

const dbs = new TestDatabases();
beforeAll(() => dbs.start(), 120_000);
afterEach(() => dbs.closeStores());
afterAll(() => dbs.stop());

const iso = (d: Date): string => d.toISOString();
const newTask = (title: string, priority = 5) => ({ title, description: `about ${title}`, priority });
const ids = (records: readonly { id: number }[]): number[] => records.map((r) => r.id);
const nightly: NewSchedule = {
  name: 'nightly summary',
  cron: '0 2 * * *',
  timezone: 'Asia/Ho_Chi_Minh',
  title: 'Summarize the day',
  description: 'what the ward did',
  priority: 7,
  enabled: true,
};
const everyMinute: NewSchedule = { ...nightly, name: 'every minute', cron: '* * * * *', priority: 4 };

/** Everything a store holds about its tasks, for "nothing was written" checks. */
async function snapshot(store: TaskStore): Promise<unknown> {
  return {
    tasks: await store.listTasks({ limit: 1000 }),
    runs: await store.listRuns({ limit: 1000 }),
    logs: await store.listLogs({ limit: 1000 }),
    schedules: await store.listSchedules(),
  };
}

describe.each(RUNNABLE_KINDS)('TaskStore on %s', (kind) => {
  let db: TestDatabase;
  let store: TaskStore;
  beforeEach(async () => {
    db = dbs.database(kind);
    store = await db.open();
  });

  describe('opening', () => {
    it('answers ping, and init is idempotent, again and from a second connection', async () => {
      expect(store.kind).toBe(kind);
      expect(await store.ping()).toBe(true);
      await store.init();
      const other = await db.open();
      await other.init();
      const created = await store.createTask(newTask('shared'), at(0));
      expect(await other.getTask(created.id)).toEqual(created);
      await other.close();
      expect(await other.ping()).toBe(false);
    });

    it('keeps everything across close and reopen, and never reuses an id', async () => {
      const a = await store.createTask(newTask('a'), at(0));
      const claim = await store.claimTask('host/1/0', 30_000, at(1));
      await store.finishRun(claim!.run.id, 'host/1/0', { status: 'done', output: 'ok', steps: 2 }, at(2));
      await store.addLog(a.id, null, 'warn', 'a warning', at(3));
      const s1 = await store.createSchedule(nightly, testNextRun, at(4));
      const s2 = await store.createSchedule(everyMinute, testNextRun, at(5));
      await store.saveSkills([
        { name: 'summarize', description: 'd', input_schema: { type: 'object' }, service: null },
      ]);
      await store.appendChat('s', [{ role: 'user', content: 'hello' }], at(6));
      const before = {
        ...((await snapshot(store)) as object),
        skills: await store.listSkills(),
        chat: await store.chatHistory('s', 10),
        stats: await store.stats(),
      };
      expect(await store.deleteSchedule(s2.id)).toBe(true);
      await store.close();

      const reopened = await db.open();
      const after = {
        ...((await snapshot(reopened)) as object),
        skills: await reopened.listSkills(),
        chat: await reopened.chatHistory('s', 10),
        stats: await reopened.stats(),
      };
      expect(after).toEqual({ ...before, schedules: [s1] });
      // The deleted newest schedule's id is not handed out again (ids name things in logs).
      const s3 = await reopened.createSchedule(nightly, testNextRun, at(7));
      expect(s3.id).toBe(s2.id + 1);
    });

    it('refuses to create the database when told not to (a wrong path must not answer "no tasks")', async () => {
      if (kind === 'sqlite') {
        const missing = `${db.location}.missing/tasks.db`;
        expect(() => new SqliteTaskStore(missing, { create: false })).toThrow(
          /task database .*tasks\.db does not exist; it is created by the task agent/,
        );
        // A file that exists but holds no schema: not the agent's database.
        const empty = new Database(`${db.location}.empty`);
        empty.close();
        const bare = new SqliteTaskStore(`${db.location}.empty`, { create: false });
        await expect(bare.init()).rejects.toThrow(/holds no task agent schema \(user_version 0\)/);
        await bare.close();
      } else {
        const fresh = dbs.database(kind);
        const noCreate = await fresh.open({ create: false, init: false });
        await expect(noCreate.init()).rejects.toThrow(/The database has no task agent schema "t\d+"/);
      }
      // An existing database opens without creating anything.
      await store.createTask(newTask('there'), at(0));
      const reader = await db.open({ create: false });
      expect(ids(await reader.listTasks({ limit: 10 }))).toEqual([1]);
    });

    it('refuses a schema newer than it knows', async () => {
      if (kind === 'sqlite') {
        await store.close();
        const raw = new Database(db.location);
        raw.pragma('user_version = 99');
        raw.close();
      } else {
        const client = new pg.Client({ connectionString: db.location });
        await client.connect();
        await client.query(`INSERT INTO "${db.schema ?? ''}".schema_migrations (version) VALUES (99)`);
        await client.end();
      }
      const newer = await db.open({ init: false });
      await expect(newer.init()).rejects.toThrow(/schema version 99, newer than this program's 1/);
    });
  });

  describe('tasks', () => {
    it('creates pending tasks and lists them newest first, by status, up to the limit', async () => {
      const a = await store.createTask(newTask('a', 3), at(0));
      expect(a).toEqual({
        id: 1,
        title: 'a',
        description: 'about a',
        priority: 3,
        status: 'pending',
        result: null,
        attempts: 0,
        schedule_id: null,
        created_at: '2026-11-22T10:00:00.000Z',
        updated_at: '2026-11-22T10:00:00.000Z',
      });
      const b = await store.createTask(newTask('b'), at(1));
      const c = await store.createTask(newTask('c'), at(2));
      expect(await store.getTask(b.id)).toEqual(b);
      expect(await store.getTask(999)).toBeUndefined();
      expect(ids(await store.listTasks({ limit: 50 }))).toEqual([c.id, b.id, a.id]);
      expect(ids(await store.listTasks({ limit: 2 }))).toEqual([c.id, b.id]);

      await store.claimTask('w', 30_000, at(3)); // b: priority 5 before a's 3, older than c
      expect(ids(await store.listTasks({ status: 'running', limit: 50 }))).toEqual([b.id]);
      expect(ids(await store.listTasks({ status: 'pending', limit: 50 }))).toEqual([c.id, a.id]);
      expect(ids(await store.listTasks({ status: 'pending', limit: 1 }))).toEqual([c.id]);
      expect(await store.listTasks({ status: 'done', limit: 50 })).toEqual([]);
    });

    it('cancels pending and running tasks with a log naming who, and refuses finished ones', async () => {
      const p = await store.createTask(newTask('p'), at(0));
      const r = await store.createTask(newTask('r', 9), at(1));
      const claim = await store.claimTask('w1', 30_000, at(10));
      expect(claim?.task.id).toBe(r.id);

      expect(await store.cancelTask(p.id, 'the API', at(20))).toEqual({
        cancelled: true,
        previous: 'pending',
        task: { ...p, status: 'cancelled', updated_at: iso(at(20)) },
      });
      const running = await store.cancelTask(r.id, 'the proxy', at(21));
      expect(running).toEqual({
        cancelled: true,
        previous: 'running',
        task: { ...claim!.task, status: 'cancelled', updated_at: iso(at(21)) },
      });
      expect(await store.listLogs({ taskId: p.id, limit: 10 })).toEqual([
        {
          id: expect.any(Number),
          task_id: p.id,
          run_id: null,
          level: 'info',
          message: 'cancelled by the API',
          created_at: iso(at(20)),
        },
      ]);
      const rLogs = await store.listLogs({ taskId: r.id, limit: 10 });
      expect(rLogs.map((l) => [l.message, l.run_id])).toEqual([
        ['cancelled by the proxy', claim!.run.id],
        [`run ${claim!.run.id} started by w1`, claim!.run.id],
      ]);
      // The run is its worker's to end (it sees `cancelled` at its next renewal).
      expect((await store.listRuns({ taskId: r.id, limit: 10 }))[0]?.status).toBe('running');

      expect(await store.cancelTask(p.id, 'the API', at(30))).toEqual({
        cancelled: false,
        previous: 'cancelled',
        task: { ...p, status: 'cancelled', updated_at: iso(at(20)) },
      });
      const d = await store.createTask(newTask('d'), at(40));
      const dClaim = await store.claimTask('w1', 30_000, at(41));
      await store.finishRun(dClaim!.run.id, 'w1', { status: 'done', output: 'x', steps: 1 }, at(42));
      const done = await store.cancelTask(d.id, 'the API', at(43));
      expect(done).toMatchObject({ cancelled: false, previous: 'done', task: { status: 'done' } });
      expect(await store.cancelTask(999, 'the API', at(44))).toEqual({
        cancelled: false,
        task: undefined,
        previous: undefined,
      });
    });

    it('queues a finished task again (attempts reset) and leaves others as they are', async () => {
      const t = await store.createTask(newTask('t'), at(0));
      const claim = await store.claimTask('w1', 30_000, at(1));
      await store.finishRun(claim!.run.id, 'w1', { status: 'done', output: 'first answer', steps: 2 }, at(2));
      const again = await store.requeueTask(t.id, at(3));
      expect(again).toEqual({
        ...t,
        status: 'pending',
        attempts: 0,
        result: 'first answer',
        updated_at: iso(at(3)),
      });
      expect(await store.requeueTask(t.id, at(4))).toEqual(again); // pending: unchanged
      const second = await store.claimTask('w1', 30_000, at(5));
      expect(second?.task).toMatchObject({ id: t.id, status: 'running', attempts: 1 });
      expect(await store.requeueTask(t.id, at(6))).toEqual(second?.task); // running: unchanged
      expect(await store.requeueTask(999, at(7))).toBeUndefined();
      expect(ids(await store.listRuns({ taskId: t.id, limit: 10 }))).toEqual([second!.run.id, claim!.run.id]);
    });

    it('deletes a finished task with its runs and logs, refuses a pending or running one, leaves others', async () => {
      const done = await store.createTask(newTask('done'), at(0));
      const claim = await store.claimTask('w1', 30_000, at(1));
      await store.finishRun(claim!.run.id, 'w1', { status: 'done', output: 'answer', steps: 1 }, at(2));
      await store.addLog(done.id, null, 'info', 'a note about the patient', at(3));
      const kept = await store.createTask(newTask('kept'), at(4));
      await store.addLog(kept.id, null, 'info', 'kept log', at(5));
      expect(await store.deleteTask(kept.id)).toBe('active'); // pending
      const running = await store.claimTask('w1', 30_000, at(6));
      expect(running?.task.id).toBe(kept.id);
      expect(await store.deleteTask(kept.id)).toBe('active'); // running

      expect(await store.deleteTask(done.id)).toBe('deleted');
      expect(await store.getTask(done.id)).toBeUndefined();
      expect(await store.listRuns({ taskId: done.id, limit: 10 })).toEqual([]);
      expect(await store.listLogs({ taskId: done.id, limit: 10 })).toEqual([]);
      expect((await store.listLogs({ limit: 100 })).some((l) => l.task_id === done.id)).toBe(false);
      expect(await store.deleteTask(done.id)).toBe('not_found');
      // The other task, its run and its logs are untouched.
      expect(await store.getTask(kept.id)).toMatchObject({ status: 'running' });
      expect(ids(await store.listRuns({ taskId: kept.id, limit: 10 }))).toEqual([running!.run.id]);
      expect((await store.listLogs({ taskId: kept.id, limit: 10 })).map((l) => l.message)).toContain(
        'kept log',
      );
    });

    it('sweeps finished tasks last changed before a cutoff, oldest first, in batches', async () => {
      const finishedAt = async (title: string, t: number): Promise<number> => {
        const task = await store.createTask(newTask(title), at(t));
        await store.cancelTask(task.id, 'test', at(t));
        return task.id;
      };
      const a = await finishedAt('a', 1);
      const b = await finishedAt('b', 2);
      const c = await finishedAt('c', 3);
      const late = await finishedAt('late', 20);
      const open = (await store.createTask(newTask('open'), at(0))).id;
      expect(await store.deleteFinishedBefore(at(10), 2)).toBe(2);
      expect(await store.getTask(a)).toBeUndefined();
      expect(await store.getTask(b)).toBeUndefined();
      expect(await store.deleteFinishedBefore(at(10), 2)).toBe(1);
      expect(await store.getTask(c)).toBeUndefined();
      expect(await store.deleteFinishedBefore(at(10), 2)).toBe(0);
      expect(ids(await store.listTasks({ limit: 10 }))).toEqual([open, late]);
      expect(
        (await store.listLogs({ limit: 100 })).every((l) => l.task_id === late || l.task_id === open),
      ).toBe(true);
    });

    it('queues again a task cancelled while running: the old run ends and its worker loses it', async () => {
      const t = await store.createTask(newTask('t'), at(0));
      const old = await store.claimTask('w-old', 30_000, at(1));
      await store.cancelTask(t.id, 'the API', at(2));
      await store.requeueTask(t.id, at(3));
      const oldRun = (await store.listRuns({ taskId: t.id, limit: 1 }))[0];
      expect(oldRun).toMatchObject({ status: 'cancelled', finished_at: iso(at(3)) });
      expect(oldRun?.error).toMatch(/cancelled and queued again before this run stopped/);
      const fresh = await store.claimTask('w-new', 30_000, at(4));
      expect(fresh?.task.id).toBe(t.id);
      expect(await store.renewLease(old!.run.id, 'w-old', 30_000, at(5))).toBe('lost');
      expect(await store.finishRun(old!.run.id, 'w-old', { status: 'cancelled', steps: 1 }, at(6))).toBe(
        false,
      );
      expect(await store.renewLease(fresh!.run.id, 'w-new', 30_000, at(7))).toBe('ok');
    });

    it('counts tasks per status group and in total', async () => {
      expect(await store.stats()).toEqual({
        total: 0,
        pending: 0,
        running: 0,
        done: 0,
        failed: 0,
        cancelled: 0,
      });
      for (let i = 0; i < 7; i++) await store.createTask(newTask(`t${i}`), at(i));
      const c1 = await store.claimTask('w', 30_000, at(10));
      const c2 = await store.claimTask('w', 30_000, at(11));
      await store.claimTask('w', 30_000, at(12));
      await store.finishRun(c1!.run.id, 'w', { status: 'done', output: 'a', steps: 1 }, at(13));
      await store.finishRun(c2!.run.id, 'w', { status: 'failed', error: 'e', steps: 1 }, at(14));
      await store.cancelTask(7, 'the API', at(15));
      expect(await store.stats()).toEqual({
        total: 7,
        pending: 3,
        running: 1,
        done: 1,
        failed: 1,
        cancelled: 1,
      });
    });
  });

  describe('workers', () => {
    it('claims the most urgent task first, then the oldest, and logs the start', async () => {
      const priorities: [string, number][] = [
        ['a', 5],
        ['b', 8],
        ['c', 2],
        ['d', 8],
        ['e', 10],
      ];
      for (const [i, [title, priority]] of priorities.entries())
        await store.createTask(newTask(title, priority), at(i));
      const first = await store.claimTask('host/1/0', 30_000, at(100));
      expect(first).toEqual({
        task: {
          id: 5,
          title: 'e',
          description: 'about e',
          priority: 10,
          status: 'running',
          result: null,
          attempts: 1,
          schedule_id: null,
          created_at: iso(at(4)),
          updated_at: iso(at(100)),
        },
        run: {
          id: 1,
          task_id: 5,
          status: 'running',
          worker: 'host/1/0',
          steps: 0,
          started_at: iso(at(100)),
          finished_at: null,
          output: null,
          error: null,
        },
      });
      expect(await store.listLogs({ taskId: 5, limit: 10 })).toEqual([
        {
          id: 1,
          task_id: 5,
          run_id: 1,
          level: 'info',
          message: 'run 1 started by host/1/0',
          created_at: iso(at(100)),
        },
      ]);
      const order: string[] = [];
      for (;;) {
        const claim = await store.claimTask('host/1/0', 30_000, at(200));
        if (claim === undefined) break;
        order.push(claim.task.title);
      }
      expect(order).toEqual(['b', 'd', 'a', 'c']);
    });

    it("renews a lease while the run is its worker's: ok, cancelled, or lost", async () => {
      await store.createTask(newTask('t'), at(0));
      const claim = await store.claimTask('w1', 1000, at(0));
      const runId = claim!.run.id;
      expect(await store.renewLease(runId, 'w1', 1000, at(800))).toBe('ok');
      expect(await store.recoverExpired(3, at(1500))).toEqual([]); // renewed until 1800
      expect(await store.renewLease(runId, 'w2', 1000, at(900))).toBe('lost');
      expect(await store.renewLease(9999, 'w1', 1000, at(900))).toBe('lost');
      await store.cancelTask(claim!.task.id, 'the API', at(1000));
      expect(await store.renewLease(runId, 'w1', 1000, at(1100))).toBe('cancelled');

      await store.createTask(newTask('u'), at(0));
      const other = await store.claimTask('w1', 1000, at(0));
      expect((await store.recoverExpired(3, at(2000))).map((r) => [r.task.id, r.action])).toEqual([
        [other!.task.id, 'retried'],
      ]);
      expect(await store.renewLease(other!.run.id, 'w1', 1000, at(2100))).toBe('lost');
    });

    it('ends the run and its task when the holder finishes, and writes nothing for a stale worker', async () => {
      const a = await store.createTask(newTask('a', 9), at(0));
      const claim = await store.claimTask('w1', 30_000, at(1));
      expect(
        await store.finishRun(
          claim!.run.id,
          'w1',
          { status: 'done', output: 'the answer', steps: 3 },
          at(100),
        ),
      ).toBe(true);
      expect(await store.getTask(a.id)).toEqual({
        ...claim!.task,
        status: 'done',
        result: 'the answer',
        updated_at: iso(at(100)),
      });
      expect(await store.listRuns({ taskId: a.id, limit: 10 })).toEqual([
        {
          ...claim!.run,
          status: 'done',
          steps: 3,
          finished_at: iso(at(100)),
          output: 'the answer',
          error: null,
        },
      ]);
      // Finished: a second finish (or renewal) is refused.
      expect(await store.finishRun(claim!.run.id, 'w1', { status: 'failed', steps: 4 }, at(101))).toBe(false);
      expect(await store.renewLease(claim!.run.id, 'w1', 1000, at(101))).toBe('lost');

      // A worker whose lease expired and was recovered finishes late: nothing is written.
      const b = await store.createTask(newTask('b'), at(200));
      const stale = await store.claimTask('w1', 1000, at(200));
      await store.recoverExpired(3, at(1500));
      const fresh = await store.claimTask('w2', 30_000, at(1600));
      expect(fresh?.task.id).toBe(b.id);
      const before = await snapshot(store);
      expect(
        await store.finishRun(stale!.run.id, 'w1', { status: 'done', output: 'late', steps: 9 }, at(1700)),
      ).toBe(false);
      expect(
        await store.finishRun(
          fresh!.run.id,
          'w1',
          { status: 'done', output: 'wrong worker', steps: 1 },
          at(1700),
        ),
      ).toBe(false);
      expect(await snapshot(store)).toEqual(before);
      // The holder fails it.
      expect(
        await store.finishRun(fresh!.run.id, 'w2', { status: 'failed', error: 'boom', steps: 2 }, at(1800)),
      ).toBe(true);
      expect(await store.getTask(b.id)).toMatchObject({ status: 'failed', result: null, attempts: 2 });
      expect((await store.listRuns({ taskId: b.id, limit: 1 }))[0]).toMatchObject({
        status: 'failed',
        error: 'boom',
        output: null,
        steps: 2,
      });

      // Cancelled while running: the worker ends the run cancelled; the task stays cancelled even
      // when the worker finished the run before it noticed.
      const c = await store.createTask(newTask('c'), at(2000));
      const cClaim = await store.claimTask('w1', 30_000, at(2000));
      await store.cancelTask(c.id, 'the API', at(2001));
      expect(
        await store.finishRun(
          cClaim!.run.id,
          'w1',
          { status: 'cancelled', error: 'cancelled by the API', steps: 1 },
          at(2002),
        ),
      ).toBe(true);
      expect(await store.getTask(c.id)).toMatchObject({ status: 'cancelled', updated_at: iso(at(2002)) });
      expect((await store.listRuns({ taskId: c.id, limit: 1 }))[0]).toMatchObject({ status: 'cancelled' });
      const d = await store.createTask(newTask('d'), at(3000));
      const dClaim = await store.claimTask('w1', 30_000, at(3000));
      await store.cancelTask(d.id, 'the API', at(3001));
      await store.finishRun(
        dClaim!.run.id,
        'w1',
        { status: 'done', output: 'finished anyway', steps: 1 },
        at(3002),
      );
      expect(await store.getTask(d.id)).toMatchObject({ status: 'cancelled' });
      expect((await store.listRuns({ taskId: d.id, limit: 1 }))[0]).toMatchObject({ status: 'done' });
    });

    it('recovers expired leases: retried while attempts remain, then failed, logging why', async () => {
      const t = await store.createTask(newTask('t'), at(0));
      const first = await store.claimTask('host/7/0', 1000, at(0));
      expect(await store.recoverExpired(2, at(1000))).toEqual([]); // expires at 1000: not before
      const recovered = await store.recoverExpired(2, at(1001));
      const leaseError =
        'lease expired at 2026-11-22T10:00:01.000Z: worker host/7/0 stopped without finishing';
      expect(recovered).toEqual([
        {
          action: 'retried',
          task: { ...first!.task, status: 'pending', attempts: 1, updated_at: iso(at(1001)) },
          run: { ...first!.run, status: 'failed', finished_at: iso(at(1001)), error: leaseError },
        },
      ]);
      expect((await store.listLogs({ taskId: t.id, limit: 1 }))[0]).toMatchObject({
        run_id: first!.run.id,
        level: 'error',
        message: `run ${first!.run.id} failed: ${leaseError}; the task is pending again (1 of 2 attempts used)`,
      });
      expect(await store.recoverExpired(2, at(1002))).toEqual([]); // done once

      const second = await store.claimTask('host/8/0', 1000, at(2000));
      expect(second?.task.attempts).toBe(2);
      const failed = await store.recoverExpired(2, at(5000));
      expect(failed.map((r) => [r.action, r.task.status, r.task.attempts, r.run.status])).toEqual([
        ['failed', 'failed', 2, 'failed'],
      ]);
      expect((await store.listLogs({ taskId: t.id, limit: 1 }))[0]?.message).toBe(
        `run ${second!.run.id} failed: lease expired at 2026-11-22T10:00:03.000Z: worker host/8/0 stopped ` +
          'without finishing; the task failed (2 of 2 attempts used)',
      );
      expect(await store.claimTask('host/9/0', 1000, at(6000))).toBeUndefined();
    });

    it('leaves a task cancelled while its worker was gone cancelled, ending its run cancelled', async () => {
      const t = await store.createTask(newTask('t'), at(0));
      const claim = await store.claimTask('w3', 1000, at(0));
      await store.cancelTask(t.id, 'the proxy', at(100));
      expect(await store.recoverExpired(3, at(2000))).toEqual([]);
      expect(await store.getTask(t.id)).toMatchObject({ status: 'cancelled', updated_at: iso(at(100)) });
      expect((await store.listRuns({ taskId: t.id, limit: 1 }))[0]).toEqual({
        ...claim!.run,
        status: 'cancelled',
        finished_at: iso(at(2000)),
        error: 'lease expired at 2026-11-22T10:00:01.000Z: worker w3 stopped without finishing',
      });
      expect((await store.listLogs({ taskId: t.id, limit: 1 }))[0]).toMatchObject({
        level: 'warn',
        message: expect.stringMatching(
          /^run 1 ended cancelled: lease expired at .*; the task had been cancelled$/,
        ),
      });
      expect(await store.renewLease(claim!.run.id, 'w3', 1000, at(2100))).toBe('lost');
    });

    it('hands back a claim never started: the task pending again with its attempt, the run failed', async () => {
      const a = await store.createTask(newTask('a'), at(0));
      const claim = await store.claimTask('w1', 30_000, at(1));
      expect(claim?.task).toMatchObject({ id: a.id, status: 'running', attempts: 1 });
      // Not the holder: nothing is written.
      const before = await snapshot(store);
      expect(await store.releaseRun(claim!.run.id, 'w2', 'shutting down', at(2))).toBe(false);
      expect(await snapshot(store)).toEqual(before);

      expect(await store.releaseRun(claim!.run.id, 'w1', 'the task agent shut down', at(3))).toBe(true);
      expect(await store.getTask(a.id)).toMatchObject({
        status: 'pending',
        attempts: 0,
        updated_at: iso(at(3)),
      });
      expect(await store.listRuns({ taskId: a.id, limit: 5 })).toEqual([
        {
          ...claim!.run,
          status: 'failed',
          error: 'not started: the task agent shut down',
          finished_at: iso(at(3)),
        },
      ]);
      expect((await store.listLogs({ taskId: a.id, limit: 1 }))[0]).toMatchObject({
        level: 'warn',
        run_id: claim!.run.id,
        message: `run ${claim!.run.id} handed back before it started (the task agent shut down); the task is pending again`,
      });
      // Released once: the lease is gone, a second release or a renewal finds nothing.
      expect(await store.releaseRun(claim!.run.id, 'w1', 'again', at(4))).toBe(false);
      expect(await store.renewLease(claim!.run.id, 'w1', 1000, at(4))).toBe('lost');
      // Nothing is left to recover, and the task is claimed again with a fresh attempt.
      expect(await store.recoverExpired(3, at(10 * MINUTE))).toEqual([]);
      const again = await store.claimTask('w2', 30_000, at(5));
      expect(again?.task).toMatchObject({ id: a.id, attempts: 1 });

      // Cancelled between the claim and the release: it stays cancelled, the run ends cancelled.
      const b = await store.createTask(newTask('b', 1), at(20));
      const bClaim = await store.claimTask('w1', 30_000, at(21));
      expect(bClaim?.task.id).toBe(b.id);
      await store.cancelTask(b.id, 'the API', at(22));
      expect(await store.releaseRun(bClaim!.run.id, 'w1', 'the task agent shut down', at(23))).toBe(true);
      expect(await store.getTask(b.id)).toMatchObject({ status: 'cancelled', attempts: 1 });
      expect((await store.listRuns({ taskId: b.id, limit: 1 }))[0]).toMatchObject({ status: 'cancelled' });
    });

    it('stores produced text without NUL characters (PostgreSQL text can not hold one): the run finishes', async () => {
      const a = await store.createTask(newTask('a'), at(0));
      const claim = await store.claimTask('w1', 30_000, at(1));
      await store.addLog(a.id, claim!.run.id, 'info', 'step 1: thought\u0000 about it', at(2));
      expect(
        await store.finishRun(
          claim!.run.id,
          'w1',
          { status: 'done', output: 'the\u0000 answer\u0000', steps: 1 },
          at(3),
        ),
      ).toBe(true);
      expect(await store.getTask(a.id)).toMatchObject({ status: 'done', result: 'the answer' });
      expect((await store.listRuns({ taskId: a.id, limit: 1 }))[0]).toMatchObject({
        status: 'done',
        output: 'the answer',
      });
      expect((await store.listLogs({ taskId: a.id, limit: 1 }))[0]?.message).toBe('step 1: thought about it');

      const b = await store.createTask(newTask('b\u0000'), at(10));
      expect(b.title).toBe('b');
      const bClaim = await store.claimTask('w1', 30_000, at(11));
      expect(
        await store.finishRun(
          bClaim!.run.id,
          'w1',
          { status: 'failed', error: 'skill said \u0000', steps: 1 },
          at(12),
        ),
      ).toBe(true);
      expect((await store.listRuns({ taskId: b.id, limit: 1 }))[0]?.error).toBe('skill said ');

      await store.appendChat('s1', [{ role: 'assistant', content: 'hel\u0000lo' }], at(20));
      expect((await store.chatHistory('s1', 5)).map((m) => m.content)).toEqual(['hello']);
    });
  });

  describe('logs and runs', () => {
    it('adds logs and lists logs and runs newest first, per task, up to the limit', async () => {
      const a = await store.createTask(newTask('a', 9), at(0));
      const b = await store.createTask(newTask('b', 1), at(1));
      const l1 = await store.addLog(a.id, null, 'info', 'one', at(2));
      expect(l1).toEqual({
        id: l1.id,
        task_id: a.id,
        run_id: null,
        level: 'info',
        message: 'one',
        created_at: iso(at(2)),
      });
      const l2 = await store.addLog(b.id, null, 'warn', 'two', at(3));
      const ca = await store.claimTask('w', 30_000, at(4));
      const l3 = await store.addLog(a.id, ca!.run.id, 'error', 'three', at(5));
      expect(l3.run_id).toBe(ca!.run.id);
      const all = await store.listLogs({ limit: 100 });
      expect(all.map((l) => l.message)).toEqual(['three', `run ${ca!.run.id} started by w`, 'two', 'one']);
      expect(ids(await store.listLogs({ taskId: a.id, limit: 100 }))).toEqual([l3.id, all[1]!.id, l1.id]);
      expect(ids(await store.listLogs({ taskId: b.id, limit: 100 }))).toEqual([l2.id]);
      expect(ids(await store.listLogs({ limit: 2 }))).toEqual([l3.id, all[1]!.id]);
      await expect(store.addLog(999, null, 'info', 'orphan', at(6))).rejects.toThrow(UnknownTaskError);

      await store.finishRun(ca!.run.id, 'w', { status: 'done', output: 'a', steps: 1 }, at(7));
      const cb = await store.claimTask('w', 30_000, at(8));
      await store.requeueTask(a.id, at(9));
      const ca2 = await store.claimTask('w', 30_000, at(10));
      expect(ids(await store.listRuns({ limit: 10 }))).toEqual([ca2!.run.id, cb!.run.id, ca!.run.id]);
      expect(ids(await store.listRuns({ taskId: a.id, limit: 10 }))).toEqual([ca2!.run.id, ca!.run.id]);
      expect(ids(await store.listRuns({ taskId: a.id, limit: 1 }))).toEqual([ca2!.run.id]);
      expect(await store.listRuns({ taskId: 999, limit: 10 })).toEqual([]);
    });
  });

  describe('schedules', () => {
    it('creates, lists, enables, disables and deletes schedules', async () => {
      const s = await store.createSchedule(nightly, testNextRun, at(0));
      expect(s).toEqual({
        id: 1,
        name: 'nightly summary',
        cron: '0 2 * * *',
        timezone: 'Asia/Ho_Chi_Minh',
        title: 'Summarize the day',
        description: 'what the ward did',
        priority: 7,
        enabled: true,
        next_run_at: '2026-11-22T11:00:00.000Z',
        last_run_at: null,
        last_task_id: null,
        created_at: iso(T0),
        updated_at: iso(T0),
      });
      const off = await store.createSchedule({ ...everyMinute, enabled: false }, testNextRun, at(1));
      expect(off).toMatchObject({ enabled: false, next_run_at: null });
      expect(ids(await store.listSchedules())).toEqual([off.id, s.id]);
      expect(await store.getSchedule(s.id)).toEqual(s);
      expect(await store.getSchedule(999)).toBeUndefined();

      const on = await store.setScheduleEnabled(off.id, true, testNextRun, at(90_000));
      expect(on).toEqual({
        ...off,
        enabled: true,
        next_run_at: '2026-11-22T10:02:00.000Z',
        updated_at: iso(at(90_000)),
      });
      const disabled = await store.setScheduleEnabled(s.id, false, testNextRun, at(91_000));
      expect(disabled).toEqual({ ...s, enabled: false, next_run_at: null, updated_at: iso(at(91_000)) });
      expect(await store.setScheduleEnabled(999, true, testNextRun, at(92_000))).toBeUndefined();

      expect(await store.deleteSchedule(s.id)).toBe(true);
      expect(await store.deleteSchedule(s.id)).toBe(false);
      expect(ids(await store.listSchedules())).toEqual([off.id]);
    });

    it('fires a due schedule once per slot, and a missed slot once', async () => {
      const s = await store.createSchedule(everyMinute, testNextRun, at(0)); // next 10:01
      await store.createSchedule({ ...everyMinute, name: 'off', enabled: false }, testNextRun, at(0));
      expect(await store.fireDueSchedules(testNextRun, at(59_999))).toEqual([]);

      const fired = await store.fireDueSchedules(testNextRun, at(MINUTE));
      expect(fired).toEqual([
        {
          schedule: {
            ...s,
            last_run_at: '2026-11-22T10:01:00.000Z',
            last_task_id: 1,
            next_run_at: '2026-11-22T10:02:00.000Z',
            updated_at: '2026-11-22T10:01:00.000Z',
          },
          task: {
            id: 1,
            title: 'Summarize the day',
            description: 'what the ward did',
            priority: 4,
            status: 'pending',
            result: null,
            attempts: 0,
            schedule_id: s.id,
            created_at: '2026-11-22T10:01:00.000Z',
            updated_at: '2026-11-22T10:01:00.000Z',
          },
        },
      ]);
      expect(await store.listLogs({ taskId: 1, limit: 10 })).toEqual([
        {
          id: 1,
          task_id: 1,
          run_id: null,
          level: 'info',
          message: 'created by schedule every minute',
          created_at: iso(at(MINUTE)),
        },
      ]);
      expect(await store.fireDueSchedules(testNextRun, at(MINUTE))).toEqual([]);
      expect(await store.fireDueSchedules(testNextRun, at(MINUTE + 30_000))).toEqual([]);

      // Down for nine minutes: the missed slots fire once, and the next is after now.
      const late = await store.fireDueSchedules(testNextRun, at(10 * MINUTE + 30_000));
      expect(late.map((f) => [f.task.id, f.schedule.next_run_at])).toEqual([[2, '2026-11-22T10:11:00.000Z']]);
      expect(await store.fireDueSchedules(testNextRun, at(10 * MINUTE + 59_000))).toEqual([]);
      expect(ids(await store.listTasks({ limit: 10 }))).toEqual([2, 1]);
    });

    it('fires a schedule with no next firing once, then never; deleting it keeps its tasks', async () => {
      const once = await store.createSchedule({ ...nightly, cron: 'never' }, testNextRun, at(0));
      expect(once.next_run_at).toBeNull(); // `never` has no firing at all
      const hourly = await store.createSchedule(nightly, testNextRun, at(0));
      const lastOnly: NextRun = (cron, tz, after) =>
        after.getTime() < at(60 * MINUTE).getTime() ? testNextRun(cron, tz, after) : null;
      const fired = await store.fireDueSchedules(lastOnly, at(60 * MINUTE));
      expect(fired.map((f) => [f.schedule.id, f.schedule.next_run_at])).toEqual([[hourly.id, null]]);
      expect(await store.fireDueSchedules(testNextRun, at(600 * MINUTE))).toEqual([]);
      expect(await store.deleteSchedule(hourly.id)).toBe(true);
      expect(await store.getTask(fired[0]!.task.id)).toMatchObject({ schedule_id: null, status: 'pending' });
    });

    it('fires atomically: a failing next-run computation creates nothing', async () => {
      await store.createSchedule(everyMinute, testNextRun, at(0));
      const before = await snapshot(store);
      const broken: NextRun = () => {
        throw new Error('bad time zone');
      };
      await expect(store.fireDueSchedules(broken, at(2 * MINUTE))).rejects.toThrow('bad time zone');
      expect(await snapshot(store)).toEqual(before);
    });
  });

  describe('skills and chat', () => {
    const skills: SkillEntry[] = [
      {
        name: 'search_codes',
        description: 'Search ICD-10 codes',
        input_schema: {
          type: 'object',
          properties: { query: { type: 'string' }, limit: { type: 'integer' } },
          required: ['query'],
        },
        service: 'codesearch',
      },
      {
        name: 'summarize',
        description: 'Summarize a text',
        input_schema: { type: 'object', properties: {} },
        service: null,
      },
    ];

    it('replaces the skill catalogue and lists it in the saved order, schemas intact', async () => {
      expect(await store.listSkills()).toEqual([]);
      await store.saveSkills(skills);
      const listed = await store.listSkills();
      expect(listed).toEqual(skills);
      expect(JSON.stringify(listed)).toBe(JSON.stringify(skills)); // key order too
      await store.saveSkills([skills[1]!]);
      expect(await store.listSkills()).toEqual([skills[1]]);
      await store.saveSkills([]);
      expect(await store.listSkills()).toEqual([]);
    });

    it('appends chat messages per session, answers the last ones oldest first, clears a session', async () => {
      await store.appendChat(
        's1',
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
        ],
        at(0),
      );
      await store.appendChat('s2', [{ role: 'user', content: 'other' }], at(1));
      await store.appendChat('s1', [{ role: 'user', content: 'how are you?' }], at(2));
      await store.appendChat('s1', [], at(3));
      expect(await store.chatHistory('s1', 10)).toEqual([
        { role: 'user', content: 'hi', created_at: iso(at(0)) },
        { role: 'assistant', content: 'hello', created_at: iso(at(0)) },
        { role: 'user', content: 'how are you?', created_at: iso(at(2)) },
      ]);
      expect((await store.chatHistory('s1', 2)).map((m) => m.content)).toEqual(['hello', 'how are you?']);
      expect(await store.clearChat('s1')).toBe(true);
      expect(await store.chatHistory('s1', 10)).toEqual([]);
      expect(await store.clearChat('s1')).toBe(false);
      expect(await store.chatHistory('s2', 10)).toEqual([
        { role: 'user', content: 'other', created_at: iso(at(1)) },
      ]);
    });
  });

  describe('query bodies (the agent online, the proxy offline)', () => {
    async function threeTasks(): Promise<Task[]> {
      const a = await store.createTask(newTask('a'), at(0));
      const b = await store.createTask(newTask('b', 9), at(1));
      const c = await store.createTask(newTask('c'), at(2));
      await store.claimTask('w', 30_000, at(3)); // b
      return [a, b, c];
    }

    it('lists tasks by any status name of a group, with the default and maximum limits', async () => {
      const [a, b, c] = await threeTasks();
      expect(ids((await listTasksBody(store, {})).tasks)).toEqual([c!.id, b!.id, a!.id]);
      expect(ids((await listTasksBody(store, { status: 'in_progress' })).tasks)).toEqual([b!.id]);
      expect(ids((await listTasksBody(store, { status: ' Queued ' })).tasks)).toEqual([c!.id, a!.id]);
      expect(ids((await listTasksBody(store, { status: '', limit: '2' })).tasks)).toEqual([c!.id, b!.id]);
      expect(ids((await listTasksBody(store, { limit: 1 })).tasks)).toEqual([c!.id]);
      expect((await listTasksBody(store, { limit: TASKS_LIMIT_MAX * 10 })).tasks).toHaveLength(3);
      expect(await listTasksBody(store, { status: 'success' })).toEqual({ tasks: [] });
    });

    it('refuses a bad status or limit with a 422 naming the field and the valid values', async () => {
      const bad = async (input: Parameters<typeof listTasksBody>[1], source?: 'query' | 'body') => {
        try {
          await listTasksBody(store, input, source);
        } catch (error) {
          return error;
        }
        throw new Error('accepted');
      };
      const status = await bad({ status: 'finished' });
      expect(status).toBeInstanceOf(ValidationError);
      expect((status as ValidationError).status).toBe(422);
      expect((status as ValidationError).issues).toEqual([
        {
          loc: ['query', 'status'],
          msg: expect.stringContaining('"finished" is not a status name'),
          type: 'enum',
        },
      ]);
      expect((status as ValidationError).message).toContain(`valid status names: ${STATUS_NAMES.join(', ')}`);
      for (const limit of ['0', '-3', 'ten', '2.5', 0, 1.5, ['1', '2']]) {
        const error = await bad({ limit }, 'body');
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).issues[0]?.loc).toEqual(['body', 'limit']);
        expect((error as ValidationError).message).toContain(
          'must be a whole number from 1 to 500 (default 50)',
        );
      }
      expect(await bad({ status: ['pending', 'done'] })).toBeInstanceOf(ValidationError);
    });

    it('answers a task with its newest logs and runs, 404 for an unknown id, 422 for a bad one', async () => {
      const [, b] = await threeTasks();
      for (let i = 0; i < DETAIL_LOGS_LIMIT + 5; i++)
        await store.addLog(b!.id, null, 'info', `step ${i}`, at(10 + i));
      const detail = await taskDetailBody(store, b!.id);
      expect(detail.task).toEqual(await store.getTask(b!.id));
      expect(detail.logs).toHaveLength(DETAIL_LOGS_LIMIT);
      expect(detail.logs[0]?.message).toBe(`step ${DETAIL_LOGS_LIMIT + 4}`);
      expect(detail.runs).toEqual(await store.listRuns({ taskId: b!.id, limit: 50 }));
      expect(await taskDetailBody(store, String(b!.id))).toEqual(detail);
      await expect(taskDetailBody(store, 999)).rejects.toThrow(new NotFoundError('Task 999 not found'));
      await expect(taskDetailBody(store, 'abc', ['body', 'task_id'])).rejects.toMatchObject({
        status: 422,
        issues: [
          { loc: ['body', 'task_id'], msg: 'must be a task id (a whole number from 1)', type: 'int_parsing' },
        ],
      });
    });

    it('answers logs and runs with their default and maximum limits, per task', async () => {
      const [a, b] = await threeTasks();
      for (let i = 0; i < LOGS_LIMIT_DEFAULT + 20; i++)
        await store.addLog(a!.id, null, 'info', `l${i}`, at(10 + i));
      expect((await logsBody(store)).logs).toHaveLength(LOGS_LIMIT_DEFAULT);
      expect((await logsBody(store, { limit: String(LOGS_LIMIT_MAX + 1) })).logs).toHaveLength(
        LOGS_LIMIT_DEFAULT + 21,
      );
      expect((await logsBody(store, { taskId: String(b!.id) })).logs.map((l) => l.message)).toEqual([
        'run 1 started by w',
      ]);
      await expect(logsBody(store, { taskId: 999 })).rejects.toBeInstanceOf(NotFoundError);
      await expect(logsBody(store, { taskId: '0' }, 'body')).rejects.toMatchObject({
        issues: [{ loc: ['body', 'task_id'] }],
      });

      for (let i = 0; i < RUNS_LIMIT_DEFAULT + 3; i++) {
        const t = await store.createTask(newTask(`r${i}`, 10), at(1000 + i));
        const claim = await store.claimTask('w', 30_000, at(1000 + i));
        expect(claim?.task.id).toBe(t.id);
      }
      expect((await runsBody(store, {})).runs).toHaveLength(RUNS_LIMIT_DEFAULT);
      expect((await runsBody(store, { limit: '3' })).runs.map((r) => r.id)).toEqual([54, 53, 52]);
      expect((await runsBody(store, { taskId: b!.id })).runs.map((r) => r.id)).toEqual([1]);
      await expect(runsBody(store, { taskId: 999 })).rejects.toBeInstanceOf(NotFoundError);
    });

    it('answers stats, skills and schedules bodies', async () => {
      await threeTasks();
      await store.saveSkills([
        { name: 'summarize', description: 'd', input_schema: { type: 'object' }, service: null },
      ]);
      const s = await store.createSchedule(nightly, testNextRun, at(0));
      expect(await statsBody(store)).toEqual({
        stats: { total: 3, pending: 2, running: 1, done: 0, failed: 0, cancelled: 0 },
      });
      expect(await skillsBody(store)).toEqual({ skills: await store.listSkills() });
      expect(await schedulesBody(store)).toEqual({ schedules: [s] });
    });
  });
});

describe('priority field', () => {
  it('reads numbers and words, refuses the rest', () => {
    expect(parsePriority(undefined)).toBe(5);
    expect(parsePriority('')).toBe(5);
    expect(parsePriority('high')).toBe(8);
    expect(parsePriority(' Urgent ')).toBe(10);
    expect(parsePriority('3')).toBe(3);
    expect(parsePriority(1)).toBe(1);
    for (const bad of ['11', '0', 'medium', 2.5, true]) {
      expect(() => parsePriority(bad)).toThrow(
        /body\.priority: must be a whole number from 1 to 10 or one of low \(2\), normal \(5\), high \(8\), urgent \(10\)/,
      );
    }
  });
});

// The same calls on both stores give the same records, byte for byte (ids and times included).
(RUNNABLE_KINDS.length === 2 ? describe : describe.skip)('SQLite and PostgreSQL', () => {
  async function script(store: TaskStore): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    out['created'] = [
      await store.createTask(newTask('a', 3), at(0)),
      await store.createTask({ ...newTask('b', 9), description: 'Đau ngực, khó thở — "quoted"\n' }, at(1)),
      await store.createTask(newTask('c', 9), at(2)),
      await store.createTask(newTask('d'), at(3)),
    ];
    const c1 = await store.claimTask('host/1/0', 1000, at(10));
    const c2 = await store.claimTask('host/1/1', 1000, at(11));
    out['claims'] = [c1, c2];
    out['renewed'] = await store.renewLease(c1!.run.id, 'host/1/0', 5000, at(500));
    out['log'] = await store.addLog(c1!.task.id, c1!.run.id, 'info', 'called skill search_codes', at(600));
    out['finished'] = await store.finishRun(
      c1!.run.id,
      'host/1/0',
      { status: 'done', output: 'R07.4', steps: 2 },
      at(700),
    );
    out['cancel'] = await store.cancelTask(4, 'the proxy', at(800));
    out['recovered'] = await store.recoverExpired(3, at(2000));
    out['requeued'] = await store.requeueTask(c1!.task.id, at(2100));
    out['c3'] = await store.claimTask('host/2/0', 1000, at(2200));
    out['released'] = await store.releaseRun(
      (out['c3'] as { run: { id: number } }).run.id,
      'host/2/0',
      'the task agent shut down',
      at(2250),
    );
    out['nul log'] = await store.addLog(c2!.task.id, null, 'info', 'an LLM\u0000 thought', at(2260));
    out['renew cancelled'] = await store.cancelTask(c2!.task.id, 'the API', at(2300));
    out['schedules'] = [
      await store.createSchedule(nightly, testNextRun, at(0)),
      await store.createSchedule(everyMinute, testNextRun, at(0)),
      await store.createSchedule({ ...everyMinute, enabled: false }, testNextRun, at(0)),
    ];
    out['toggled'] = await store.setScheduleEnabled(3, true, testNextRun, at(30_000));
    out['fired'] = await store.fireDueSchedules(testNextRun, at(60 * MINUTE));
    out['deleted'] = await store.deleteSchedule(2);
    await store.saveSkills([
      {
        name: 'search_codes',
        description: 'd',
        input_schema: { type: 'object', required: ['q'], properties: { q: {} } },
        service: 'codesearch',
      },
    ]);
    out['skills'] = await store.listSkills();
    await store.appendChat(
      'sess',
      [
        { role: 'user', content: 'xin chào' },
        { role: 'assistant', content: 'chào' },
      ],
      at(5),
    );
    out['chat'] = await store.chatHistory('sess', 10);
    out['cleared'] = await store.clearChat('sess');
    out['task 2'] = await store.getTask(2);
    out['schedule 1'] = await store.getSchedule(1);
    out['stats'] = await store.stats();
    out['tasks'] = await store.listTasks({ limit: 100 });
    out['running'] = await store.listTasks({ status: 'running', limit: 100 });
    out['logs'] = await store.listLogs({ limit: 100 });
    out['runs'] = await store.listRuns({ limit: 100 });
    out['listed schedules'] = await store.listSchedules();
    out['bodies'] = [
      await listTasksBody(store, { status: 'active' }),
      await taskDetailBody(store, 1),
      await logsBody(store, { taskId: 2 }),
      await runsBody(store, {}),
      await statsBody(store),
    ];
    return out;
  }

  it('answer the same records for the same calls', async () => {
    const sqlite = await script(await dbs.database('sqlite').open());
    const postgres = await script(await dbs.database('postgresql').open());
    expect(postgres).toEqual(sqlite);
    expect(JSON.stringify(postgres)).toBe(JSON.stringify(sqlite));
    // The script did reach every path it names.
    expect(sqlite['recovered']).toEqual([expect.objectContaining({ action: 'retried' })]);
    expect(sqlite['fired']).toHaveLength(3);
  });
});
