/**
 * `/health` and `/status` before the store is open: while it is still opening and after opening it
 * failed, both answer their own documented shapes (`status: unhealthy` with the `reason`; the
 * store's kind from the configuration), never the kit's generic 503.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildTaskAgentApp } from '../../services/task-agent/src/app.js';
import { loadTaskAgentConfig } from '../../services/task-agent/src/config.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import { captureLogs } from '../kit/helpers.js';
import { closedPort } from '../patient-sim/helpers.js';
import { TEST_ENV, taskAgentAuth, tempSqlitePath, until } from './helpers.js';

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.shutdown('test finished');
  server = undefined;
});

async function start(
  openStore: () => Promise<TaskStore>,
  env: Record<string, string> = {},
): Promise<{ url: string; begin: () => Promise<void> }> {
  const config = loadTaskAgentConfig({
    ...TEST_ENV,
    LLM_URL: `http://127.0.0.1:${String(await closedPort())}`,
    TASK_AGENT_DB: tempSqlitePath(),
    ...env,
  });
  const { destination } = captureLogs();
  const service = buildTaskAgentApp({
    config,
    logger: createLogger({ service: 'task-agent', level: 'silent', destination }),
    processMetrics: false,
    openStore,
  });
  server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => service.close() });
  return { url: server.url, begin: () => service.start() };
}

async function json(url: string, auth = false): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, auth ? { headers: taskAgentAuth } : {});
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('/health and /status before the store is open', () => {
  it.each([
    ['SQLite', {}, 'sqlite'],
    ['PostgreSQL', { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, 'postgresql'],
  ] as const)('answer their shapes while the %s store is opening', async (_name, env, kind) => {
    // The store never opens (start() is not even called: the state a slow open leaves).
    const agent = await start(() => new Promise<TaskStore>(() => undefined), env);
    const health = await json(`${agent.url}/health`);
    expect(health.status).toBe(503);
    expect(health.body).toEqual({
      status: 'unhealthy',
      service: 'task-agent',
      version: expect.any(String),
      store: kind,
      llm: { url: expect.any(String), state: 'unknown', model: null },
      reason: 'starting: the store is not open yet',
    });
    const status = await json(`${agent.url}/status`, true);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      service: 'task-agent',
      status: 'not_ready',
      reason: 'starting: the store is not open yet',
      store: kind,
      tasks: null,
      workers: { busy: 0 },
    });
  });

  it('say why when opening the store failed', async () => {
    const agent = await start(() => Promise.reject(new Error('disk full')));
    void agent.begin();
    const health = await until(async () => {
      const h = await json(`${agent.url}/health`);
      return String(h.body['reason']).includes('disk full') ? h : undefined;
    });
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({
      status: 'unhealthy',
      store: 'sqlite',
      reason: 'the store cannot be opened: disk full',
    });
    const status = await json(`${agent.url}/status`, true);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      status: 'not_ready',
      reason: 'the store cannot be opened: disk full',
      store: 'sqlite',
    });
  });
});
