/**
 * The proxy in front of a task agent that is reached but answers 503 (starting, its store opening,
 * draining for a shutdown), before a probe notices: reads are answered from the agent's store, as
 * when it is offline (the same `X-Task-Proxy-Source: store`); writes and chat pass the 503 on.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { listTasksBody, openTaskStore, statsBody } from '../../services/task-agent/src/store/index.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import {
  ALICE,
  ProxyClient,
  metricValue,
  startFakeAgent,
  startProxy,
  writeUsersFile,
  type FakeAgent,
  type ProxyTestServer,
} from './helpers.js';

let agent: FakeAgent;
let agentCalls: string[];
let store: TaskStore;
let proxy: ProxyTestServer;
let client: ProxyClient;

beforeAll(async () => {
  const sqlitePath = join(mkdtempSync(join(tmpdir(), 'task-proxy-503-')), 'task-agent.sqlite');
  store = await openTaskStore({ sqlitePath, create: true });
  await store.createTask({ title: 'Review labs', description: 'bed 4', priority: 5 }, new Date());
  // Healthy at its probe (the proxy is online), draining on its API.
  agentCalls = [];
  agent = await startFakeAgent((req, res) => {
    agentCalls.push(`${req.method ?? ''} ${req.url ?? ''}`);
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' });
    res.end('{"detail":"Service not ready: shutting down"}');
  });
  proxy = await startProxy({
    TASK_AGENT_URL: agent.url,
    TASK_AGENT_DB: sqlitePath,
    TASK_PROXY_USERS_FILE: await writeUsersFile([ALICE]),
    TASK_PROXY_PROBE_MS: '600000',
  });
  client = new ProxyClient(proxy.url);
  expect((await client.login(ALICE)).status).toBe(200);
});
afterAll(async () => {
  await proxy.close();
  await agent.close();
  await store.close();
});

describe('a task agent answering 503', () => {
  it('answers reads from the store, marked as the offline answers are', async () => {
    expect(await client.ok('status')).toEqual({ status: 'online' });
    const tasks = await client.action('list_tasks');
    expect(tasks.status).toBe(200);
    expect(tasks.headers.get('x-task-proxy-source')).toBe('store');
    expect(tasks.body).toEqual(JSON.parse(JSON.stringify(await listTasksBody(store, {}))));
    const stats = await client.action('get_stats');
    expect([stats.status, stats.headers.get('x-task-proxy-source')]).toEqual([200, 'store']);
    expect(stats.body).toEqual(JSON.parse(JSON.stringify(await statsBody(store))));
    const detail = await client.action('get_task', { task_id: 1 });
    expect([detail.status, detail.headers.get('x-task-proxy-source')]).toEqual([200, 'store']);
    expect(detail.body['task']).toMatchObject({ id: 1, title: 'Review labs' });
    // The agent was asked first each time.
    expect(agentCalls.filter((c) => c.startsWith('GET '))).toHaveLength(3);
    expect(await metricValue(proxy.url, 'task_proxy_offline_answers_total', { action: 'list_tasks' })).toBe(
      1,
    );
    // A 503 is not an outage: the proxy stays online (its probe decides).
    expect(await client.ok('status')).toEqual({ status: 'online' });
  });

  it('passes the 503 on for writes and chat, with Retry-After', async () => {
    const created = await client.action('create_task', { title: 'Check INR' });
    expect(created.status).toBe(503);
    expect(created.headers.get('retry-after')).toBe('7');
    expect(String(created.body['detail'])).toMatch(/not available \(503\): Service not ready: shutting down/);
    expect((await store.listTasks({ limit: 10 })).map((t) => t.title)).toEqual(['Review labs']);
    const chat = await client.action('chat', { message: 'hello' });
    expect(chat.status).toBe(503);
  });
});
