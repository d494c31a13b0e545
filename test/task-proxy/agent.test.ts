/**
 * The proxy in front of the REAL task agent (the built agent as a process, running tasks with the
 * real text LLM on the tiny model), on SQLite and on PostgreSQL (Debian's server started here):
 * every action online; then the agent is SIGKILLed and the proxy answers tasks, logs, runs, stats,
 * skills and schedules from the agent's store with bodies deep-equal to the online answers taken
 * just before, queues create_task, applies cancel_task, refuses chat; the restarted agent runs the
 * queued task, ends a run cancelled while it was down, and nothing is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { QUEUED_MESSAGE } from '../../services/task-proxy/src/domain/proxy.js';
import { createDatabase, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { occupyLlm, startLlm, type LlmTestServer } from '../llm/helpers.js';
import { TASK_AGENT_TOKEN, api, tempSqlitePath } from '../task-agent/helpers.js';
import {
  ALICE,
  ProxyClient,
  freePort,
  startAgentProcess,
  startProxy,
  until,
  writeUsersFile,
  type AgentProcess,
  type ProxyTestServer,
} from './helpers.js';

interface Task {
  id: number;
  title: string;
  status: string;
  result: string | null;
}
interface Detail {
  task: Task;
  logs: { level: string; message: string; run_id: number | null }[];
  runs: { id: number; status: string; error: string | null; finished_at: string | null }[];
}

const FINAL = ['done', 'failed', 'cancelled'];

let llm: LlmTestServer;
let postgres: TestPostgres | undefined;
let usersFile: string;

beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '1', QUEUE_SIZE: '16' });
  postgres = await startPostgres();
  usersFile = await writeUsersFile([ALICE]);
}, 120_000);
afterAll(async () => {
  await llm.close();
  postgres?.stop();
});

describe.each([
  ['SQLite', () => Promise.resolve({ TASK_AGENT_DB: tempSqlitePath() })],
  [
    'PostgreSQL',
    async () => {
      if (postgres === undefined) throw new Error('PostgreSQL did not start');
      return { DATABASE_URL: await createDatabase(postgres, 'task_proxy') };
    },
  ],
] as const)('the task proxy in front of the real task agent (%s)', (_name, storeEnv) => {
  let storeVars: Record<string, string>;
  let agentPort: number;
  let agent: AgentProcess | undefined;
  let proxy: ProxyTestServer;
  let client: ProxyClient;
  const agentEnv = (): Record<string, string> => ({ LLM_URL: llm.url, ...storeVars });

  /** The task's detail through the proxy, once it has finished. */
  const finished = (id: number): Promise<Detail> =>
    until(
      async () => {
        const d = (await client.ok('get_task', { task_id: id })) as unknown as Detail;
        return FINAL.includes(d.task.status) ? d : undefined;
      },
      30_000,
      `task ${id} finished`,
    );
  const state = async (): Promise<unknown> => (await client.ok('status'))['status'];

  beforeAll(async () => {
    storeVars = await storeEnv();
    agentPort = await freePort();
    agent = await startAgentProcess(agentEnv(), agentPort);
    proxy = await startProxy({
      TASK_AGENT_URL: agent.url,
      TASK_AGENT_API_TOKEN: TASK_AGENT_TOKEN,
      TASK_PROXY_USERS_FILE: usersFile,
      ...storeVars,
    });
    client = new ProxyClient(proxy.url);
    expect((await client.login(ALICE)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await proxy.close();
    await agent?.kill();
  });

  it('answers every action through the agent while it is online', async () => {
    const online = agent!;
    expect(await client.ok('status')).toEqual({ status: 'online' });

    const created = await client.action('create_task', {
      title: 'List the red flags of chest pain',
      priority: 'high',
    });
    expect(created.status).toBe(200);
    expect(created.headers.get('x-task-proxy-source')).toBe('agent');
    expect(created.body).toEqual({ id: expect.any(Number), status: 'pending' });
    const id = created.body['id'] as number;
    const done = await finished(id);
    expect(done.task.title).toBe('List the red flags of chest pain');
    expect(done.runs.length).toBeGreaterThanOrEqual(1);
    expect(done.logs.some((l) => l.message === 'created through the API')).toBe(true);
    // The proxy's answers are the agent's own.
    expect(done).toEqual((await api(online.url, 'GET', `/api/v1/tasks/${id}`)).body);
    expect(await client.ok('list_tasks')).toEqual((await api(online.url, 'GET', '/api/v1/tasks')).body);
    expect(
      await client.ok('list_tasks', {
        status: done.task.status === 'done' ? 'completed' : 'error',
        limit: 5,
      }),
    ).toEqual((await api(online.url, 'GET', `/api/v1/tasks?status=${done.task.status}&limit=5`)).body);
    expect(await client.ok('get_task_logs', { task_id: id })).toEqual(
      (await api(online.url, 'GET', `/api/v1/logs?task_id=${id}`)).body,
    );
    expect(await client.ok('get_runs', { task_id: id })).toEqual(
      (await api(online.url, 'GET', `/api/v1/runs?task_id=${id}`)).body,
    );
    const stats = await client.ok('get_stats');
    expect(Object.keys(stats['stats'] as object).sort()).toEqual([
      'cancelled',
      'done',
      'failed',
      'pending',
      'running',
      'total',
    ]);
    expect((stats['stats'] as { total: number }).total).toBe(1);
    const skills = (await client.ok('get_skills'))['skills'] as { name: string }[];
    expect(skills.length).toBeGreaterThan(0);
    expect(await client.ok('get_schedules')).toEqual({ schedules: [] });
    // The agent's errors pass through with their status and message.
    expect(await client.action('get_task', { task_id: 999_999 })).toMatchObject({
      status: 404,
      body: { detail: 'Task 999999 not found' },
    });
    // A proxy without the agent's token is told what to set.
    const tokenless = await startProxy({ TASK_AGENT_URL: online.url, TASK_PROXY_USERS_FILE: usersFile });
    try {
      const c = new ProxyClient(tokenless.url);
      await c.login(ALICE);
      const refused = await c.action('list_tasks');
      expect(refused.status).toBe(502);
      expect(String(refused.body['detail'])).toMatch(
        /refused the proxy's token \(401\): set TASK_AGENT_API_TOKEN/,
      );
    } finally {
      await tokenless.close();
    }

    // Chat keeps a session; clear_history clears it.
    const chat = await client.ok('chat', { message: 'Hello, which tasks are pending?' });
    expect(chat).toEqual({
      response: expect.any(String),
      model: expect.any(String),
      session_id: expect.any(String),
    });
    const again = await client.ok('chat', { message: 'And now?', session_id: chat['session_id'] });
    expect(again['session_id']).toBe(chat['session_id']);
    expect(await client.ok('clear_history', { session_id: chat['session_id'] })).toEqual({ cleared: true });
    expect(await client.ok('clear_history', { session_id: chat['session_id'] })).toEqual({ cleared: false });

    // cancel_task on a task that is running (its LLM call waits on a busy LLM).
    const busy = occupyLlm(llm.url);
    try {
      const target = (await client.ok('create_task', { title: 'To be cancelled' }))['id'] as number;
      await until(async () => {
        const d = (await client.ok('get_task', { task_id: target })) as unknown as Detail;
        return d.task.status === 'running' ? true : undefined;
      });
      expect(await client.ok('cancel_task', { task_id: target })).toEqual({ cancelled: true });
      const twice = await client.action('cancel_task', { task_id: target });
      expect(twice.status).toBe(409);
      expect(twice.body['detail']).toBe(
        `Task ${target} is already cancelled: only pending or running tasks can be cancelled`,
      );
      expect((await finished(target)).task.status).toBe('cancelled');
      // delete_task: a finished task goes with its runs and logs.
      expect(await client.ok('delete_task', { task_id: target })).toEqual({ deleted: true, id: target });
      expect((await client.action('get_task', { task_id: target })).status).toBe(404);
      expect((await client.action('delete_task', { task_id: target })).status).toBe(404);
    } finally {
      busy.release();
      await busy.done;
    }
  }, 90_000);

  it('answers from the store identically when the agent is killed; queues, cancels, refuses chat; the restarted agent loses nothing', async () => {
    // A schedule (never due in the test) so that get_schedules has something to compare.
    const schedule = await api(agent!.url, 'POST', '/api/v1/schedules', {
      name: 'new year review',
      cron: '0 0 1 1 *',
      title: 'Yearly review',
    });
    expect(schedule.status).toBe(201);
    // Everything finished: nothing changes between the snapshot and the kill.
    await until(async () => {
      const tasks = (await client.ok('list_tasks'))['tasks'] as Task[];
      return tasks.every((t) => FINAL.includes(t.status)) ? true : undefined;
    });
    const tasks = (await client.ok('list_tasks'))['tasks'] as Task[];
    const reads: [string, Record<string, unknown>][] = [
      ['list_tasks', {}],
      ['list_tasks', { status: 'success' }],
      ['list_tasks', { status: 'canceled', limit: 1 }],
      ['list_tasks', { status: 'waiting' }],
      ['get_task_logs', {}],
      ['get_task_logs', { limit: 3 }],
      ['get_runs', {}],
      ['get_stats', {}],
      ['get_skills', {}],
      ['get_schedules', {}],
      ...tasks.flatMap((t): [string, Record<string, unknown>][] => [
        ['get_task', { task_id: t.id }],
        ['get_task_logs', { task_id: t.id }],
        ['get_runs', { task_id: t.id, limit: 2 }],
      ]),
    ];
    const before: Record<string, unknown>[] = [];
    for (const [action, fields] of reads) {
      const answer = await client.action(action, fields);
      expect([action, answer.headers.get('x-task-proxy-source')]).toEqual([action, 'agent']);
      before.push(answer.body);
    }

    // Two more proxies that will not probe again: they still believe the agent online after the
    // kill, so their first calls find it gone and fall back to the store at once.
    const slow = {
      TASK_AGENT_URL: agent!.url,
      TASK_AGENT_API_TOKEN: TASK_AGENT_TOKEN,
      TASK_PROXY_USERS_FILE: usersFile,
      TASK_PROXY_PROBE_MS: '600000',
      ...storeVars,
    };
    const reader = await startProxy(slow);
    const writer = await startProxy(slow);
    const readerClient = new ProxyClient(reader.url);
    const writerClient = new ProxyClient(writer.url);
    await readerClient.login(ALICE);
    await writerClient.login(ALICE);
    expect(await readerClient.ok('status')).toEqual({ status: 'online' });
    expect(await writerClient.ok('status')).toEqual({ status: 'online' });

    await agent!.kill();
    agent = undefined;
    const read = await readerClient.action('list_tasks');
    expect([read.status, read.headers.get('x-task-proxy-source')]).toEqual([200, 'store']);
    expect(read.body).toEqual(before[0]);
    expect(await readerClient.ok('status')).toEqual({ status: 'offline' });
    await reader.close();
    await until(async () => ((await state()) === 'offline' ? true : undefined), 5000, 'the proxy offline');

    for (const [i, [action, fields]] of reads.entries()) {
      const answer = await client.action(action, fields);
      expect([action, fields, answer.status, answer.headers.get('x-task-proxy-source')]).toEqual([
        action,
        fields,
        200,
        'store',
      ]);
      expect([action, fields, answer.body]).toEqual([action, fields, before[i]]);
    }
    expect(await client.action('get_task', { task_id: 999_999 })).toMatchObject({
      status: 404,
      body: { detail: 'Task 999999 not found' },
    });

    // A write that certainly did not reach the agent (connection refused) goes to the store.
    const fallback = await writerClient.ok('create_task', { title: 'Sent as the agent died' });
    expect(fallback).toMatchObject({ status: 'pending', queued: true });
    expect(await writerClient.ok('status')).toEqual({ status: 'offline' });
    await writer.close();

    // create_task is queued; cancel_task is applied; chat is refused.
    const queued = await client.ok('create_task', {
      title: 'Queued while the agent was down',
      description: 'run me later',
    });
    expect(queued).toEqual({
      id: expect.any(Number),
      status: 'pending',
      queued: true,
      message: QUEUED_MESSAGE,
    });
    const dropped = (await client.ok('create_task', { title: 'Queued, then cancelled' }))['id'] as number;
    expect(await client.ok('cancel_task', { task_id: dropped })).toEqual({ cancelled: true });
    // delete_task is applied too: refused while pending, done once cancelled.
    const forgotten = (await client.ok('create_task', { title: 'Queued, then deleted' }))['id'] as number;
    const early = await client.action('delete_task', { task_id: forgotten });
    expect(early.status).toBe(409);
    expect(early.body['detail']).toBe(
      `Task ${forgotten} is pending or running: cancel it before deleting it`,
    );
    await client.ok('cancel_task', { task_id: forgotten });
    expect(await client.ok('delete_task', { task_id: forgotten })).toEqual({ deleted: true, id: forgotten });
    expect((await client.action('get_task', { task_id: forgotten })).status).toBe(404);
    const chat = await client.action('chat', { message: 'Are you there?' });
    expect(chat.status).toBe(503);
    expect(String(chat.body['detail'])).toContain('chat works only while it is online');
    const statsBefore = (
      before[reads.findIndex(([a]) => a === 'get_stats')] as { stats: Record<string, number> }
    ).stats;
    expect((await client.ok('get_stats'))['stats']).toEqual({
      ...statsBefore,
      total: (statsBefore['total'] ?? 0) + 3,
      pending: (statsBefore['pending'] ?? 0) + 2,
      cancelled: (statsBefore['cancelled'] ?? 0) + 1,
    });

    // The agent comes back on the same store and port: the queued task runs; nothing is lost.
    agent = await startAgentProcess(agentEnv(), agentPort);
    await until(async () => ((await state()) === 'online' ? true : undefined), 5000, 'the proxy online');
    const ran = await finished(queued['id'] as number);
    expect(ran.task.title).toBe('Queued while the agent was down');
    expect(['done', 'failed']).toContain(ran.task.status);
    expect(ran.runs.length).toBeGreaterThanOrEqual(1);
    expect(ran.logs.map((l) => l.message)).toContain(
      'created through the task proxy while the agent was offline (queued)',
    );
    const cancelled = (await client.ok('get_task', { task_id: dropped })) as unknown as Detail;
    expect(cancelled.task.status).toBe('cancelled');
    expect(cancelled.runs).toEqual([]);
    expect(cancelled.logs.map((l) => l.message).join('\n')).toContain('the task proxy (agent offline)');
    for (const [i, [action, fields]] of reads.entries()) {
      if (action !== 'get_task') continue;
      expect(await client.ok(action, fields)).toEqual(before[i]);
    }
    expect(['done', 'failed']).toContain((await finished(fallback['id'] as number)).task.status);
    const after = (await client.ok('get_stats'))['stats'] as Record<string, number>;
    expect(after['total']).toBe((statsBefore['total'] ?? 0) + 3);
    expect(after['pending']).toBe(0);
  }, 120_000);

  it('a run cut by the kill is cancelled through the proxy while the agent is down, and ended cancelled when it is back', async () => {
    const busy = occupyLlm(llm.url);
    let released = false;
    try {
      const id = (await client.ok('create_task', { title: 'Interrupted mid-run' }))['id'] as number;
      await until(async () => {
        const d = (await client.ok('get_task', { task_id: id })) as unknown as Detail;
        return d.task.status === 'running' ? true : undefined;
      });
      await agent!.kill();
      agent = undefined;
      busy.release();
      released = true;
      await busy.done;
      await until(async () => ((await state()) === 'offline' ? true : undefined), 5000, 'the proxy offline');
      const cut = (await client.ok('get_task', { task_id: id })) as unknown as Detail;
      expect(cut.task.status).toBe('running');
      expect(cut.runs.map((r) => r.status)).toEqual(['running']);
      expect(await client.ok('cancel_task', { task_id: id })).toEqual({ cancelled: true });
      expect(((await client.ok('get_task', { task_id: id })) as unknown as Detail).task.status).toBe(
        'cancelled',
      );

      agent = await startAgentProcess(agentEnv(), agentPort);
      await until(async () => ((await state()) === 'online' ? true : undefined), 5000, 'the proxy online');
      const ended = await until(
        async () => {
          const d = (await client.ok('get_task', { task_id: id })) as unknown as Detail;
          return d.runs[0]?.status === 'running' ? undefined : d;
        },
        30_000,
        'the interrupted run ended',
      );
      expect(ended.task.status).toBe('cancelled');
      expect(ended.runs.map((r) => r.status)).toEqual(['cancelled']);
      expect(ended.runs[0]?.finished_at).not.toBeNull();
    } finally {
      if (!released) busy.release();
      await busy.done;
    }
  }, 90_000);
});
