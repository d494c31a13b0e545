import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createDatabase, startPostgres, type TestPostgres } from '../fixtures/postgres.js';
import { occupyLlm, startLlm, type LlmTestServer } from '../llm/helpers.js';
import { api, startTaskAgentProcess, tempSqlitePath, until, type TaskAgentProcess } from './helpers.js';

// The built task agent as a real process, killed with SIGKILL while a run waits on the LLM: the
// task stays `running` in the store; the restarted agent finds the expired lease, fails the
// interrupted run with a log saying why, runs the task again to its end, and every other record is
// exactly as it was. On SQLite and on PostgreSQL. `npm test` builds services/task-agent/dist first.

interface Detail {
  task: { id: number; status: string; attempts: number };
  logs: { level: string; message: string; run_id: number | null }[];
  runs: { id: number; status: string; error: string | null }[];
}

let llm: LlmTestServer;
let postgres: TestPostgres | undefined;
let agent: TaskAgentProcess | undefined;

beforeAll(async () => {
  llm = await startLlm({ MAX_CONCURRENCY: '1', QUEUE_SIZE: '16' });
  postgres = await startPostgres();
}, 120_000);
afterEach(async () => {
  await agent?.kill();
  agent = undefined;
});
function postgresServer(): TestPostgres {
  if (postgres === undefined) throw new Error('PostgreSQL did not start');
  return postgres;
}

afterAll(async () => {
  await llm.close();
  postgres?.stop();
});

const detail = async (url: string, id: number): Promise<Detail> =>
  (await api(url, 'GET', `/api/v1/tasks/${id}`)).body as unknown as Detail;

const sqlite = (): Promise<Record<string, string>> => Promise.resolve({ TASK_AGENT_DB: tempSqlitePath() });
const postgresql = async (): Promise<Record<string, string>> => ({
  DATABASE_URL: await createDatabase(postgresServer(), 'task_agent_recovery'),
});

describe.each([
  ['SIGKILL', 'SQLite', sqlite],
  ['SIGKILL', 'PostgreSQL', postgresql],
  ['SIGTERM', 'SQLite', sqlite],
] as const)('a task agent stopped by %s mid-run (%s)', (signal, _name, storeEnv) => {
  it('recovers the interrupted run after a restart, with a log saying why, and loses nothing', async () => {
    const env = { LLM_URL: llm.url, ...(await storeEnv()) };
    agent = await startTaskAgentProcess(env);
    const first = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Before the crash' })).body[
      'task'
    ] as Detail['task'];
    await until(async () =>
      (await detail(agent?.url ?? '', first.id)).task.status === 'done' ? true : undefined,
    );
    const before = await detail(agent.url, first.id);
    const statsBefore = (await api(agent.url, 'GET', '/api/v1/stats')).body;

    const busy = occupyLlm(llm.url);
    const second = (await api(agent.url, 'POST', '/api/v1/tasks', { title: 'Interrupted' })).body[
      'task'
    ] as Detail['task'];
    await until(async () =>
      (await detail(agent?.url ?? '', second.id)).task.status === 'running' ? true : undefined,
    );
    if (signal === 'SIGKILL') await agent.kill();
    else await agent.stop();
    busy.release();
    await busy.done;

    agent = await startTaskAgentProcess(env);
    const url = agent.url;
    const after = await until(
      async () => {
        const d = await detail(url, second.id);
        return d.task.status === 'done' && d.runs.length === 2 ? d : undefined;
      },
      30_000,
      'the interrupted task recovered and done',
    );
    // Runs newest first: the interrupted one failed, naming the lease; the new one is done.
    expect(after.runs.map((r) => r.status)).toEqual(['done', 'failed']);
    expect(after.runs[1]?.error).toMatch(/lease expired/);
    const why = after.logs.find((l) => l.level === 'error' && l.run_id === after.runs[1]?.id);
    expect(why?.message).toMatch(/lease expired/);
    expect(after.task.attempts).toBe(2);
    const interrupted = after.logs.some((l) => l.message.includes('interrupted: the task agent shut down'));
    expect(interrupted).toBe(signal === 'SIGTERM');
    // Nothing else changed.
    expect(await detail(url, first.id)).toEqual(before);
    const statsAfter = (await api(url, 'GET', '/api/v1/stats')).body as { stats: Record<string, number> };
    expect(statsAfter.stats['total']).toBe((statsBefore as { stats: { total: number } }).stats.total + 1);
    expect(statsAfter.stats['done']).toBe((statsBefore as { stats: { done: number } }).stats.done + 1);
    const recovered = await (await fetch(`${url}/metrics`)).text();
    expect(recovered).toMatch(/task_agent_leases_recovered_total\{[^}]*action="retried"[^}]*\} 1/);
  }, 90_000);
});
