/**
 * The proxy in front of a task agent that is up but slow (a long chat, a busy store) or that drops
 * the connection: a call past its deadline answers 504 and leaves the agent online (other users'
 * calls still go to it); only a connection failure flips the proxy offline.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
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

const STATS = { stats: { total: 0, pending: 0, running: 0, done: 0, failed: 0, cancelled: 0 } };
const TIMEOUT_MS = 300;

/** A healthy fake agent; `behaviour` says what each path does ('slow' waits past every deadline). */
const behaviour = new Map<string, 'slow' | 'reset'>();
let agent: FakeAgent;
let usersFile: string;

function reply(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const what = behaviour.get(path);
  if (what === 'reset') {
    req.socket.destroy();
    return;
  }
  const answer = (): void => {
    if (res.destroyed) return;
    if (path === '/api/v1/chat') reply(res, { response: 'hello', model: 'm', session_id: 's1' });
    else if (path === '/api/v1/stats') reply(res, STATS);
    else if (path === '/api/v1/tasks' && req.method === 'POST')
      reply(res, { task: { id: 1, title: 't', status: 'pending' } });
    else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"detail":"not here"}');
    }
  };
  if (what === 'slow') setTimeout(answer, TIMEOUT_MS * 4).unref();
  else answer();
}

beforeAll(async () => {
  usersFile = await writeUsersFile([ALICE]);
  agent = await startFakeAgent(handle);
});
afterAll(async () => {
  await agent.close();
});

describe('a slow task agent', () => {
  let proxy: ProxyTestServer;
  let client: ProxyClient;

  /** A proxy with no store (offline, every action would be 503) that probes only at start. */
  const start = async (): Promise<void> => {
    proxy = await startProxy({
      TASK_AGENT_URL: agent.url,
      TASK_PROXY_USERS_FILE: usersFile,
      TASK_AGENT_TIMEOUT_MS: String(TIMEOUT_MS),
      TASK_AGENT_CHAT_TIMEOUT_MS: String(TIMEOUT_MS),
      TASK_PROXY_PROBE_MS: '600000',
    });
    client = new ProxyClient(proxy.url);
    expect((await client.login(ALICE)).status).toBe(200);
    expect(await client.ok('status')).toEqual({ status: 'online' });
  };
  afterEach(async () => {
    behaviour.clear();
    await proxy.close();
  });

  it('answers 504 for a chat past TASK_AGENT_CHAT_TIMEOUT_MS and stays online for everyone', async () => {
    await start();
    behaviour.set('/api/v1/chat', 'slow');
    const chat = await client.action('chat', { message: 'a long question' });
    expect(chat.status).toBe(504);
    expect(String(chat.body['detail'])).toMatch(
      new RegExp(`did not answer within ${TIMEOUT_MS} ms \\(TASK_AGENT_CHAT_TIMEOUT_MS\\).*try again`),
    );
    expect(String(chat.body['detail'])).not.toMatch(/offline|unreachable/);
    // Still online: status says so, other actions go to the agent, a fast chat works.
    expect(await client.ok('status')).toEqual({ status: 'online' });
    const stats = await client.action('get_stats');
    expect([stats.status, stats.headers.get('x-task-proxy-source')]).toEqual([200, 'agent']);
    expect(stats.body).toEqual(STATS);
    behaviour.delete('/api/v1/chat');
    expect(await client.ok('chat', { message: 'quick' })).toEqual({
      response: 'hello',
      model: 'm',
      session_id: 's1',
    });
    expect(proxy.service.monitor.status.state).toBe('online');
    expect(
      await metricValue(proxy.url, 'task_proxy_upstream_request_duration_seconds_count', {
        operation: 'chat',
        outcome: 'timeout',
      }),
    ).toBe(1);
  });

  it('answers 504 for a slow read and a slow write (saying it may still happen), and stays online', async () => {
    await start();
    behaviour.set('/api/v1/stats', 'slow');
    const read = await client.action('get_stats');
    expect(read.status).toBe(504);
    expect(String(read.body['detail'])).toMatch(/did not answer within 300 ms \(TASK_AGENT_TIMEOUT_MS\)/);
    expect(await client.ok('status')).toEqual({ status: 'online' });

    behaviour.set('/api/v1/tasks', 'slow');
    const write = await client.action('create_task', { title: 'Review labs' });
    expect(write.status).toBe(504);
    expect(String(write.body['detail'])).toMatch(
      /it may still create the task: check with list_tasks before trying again/,
    );
    expect(await client.ok('status')).toEqual({ status: 'online' });
  });

  it('goes offline when the agent drops the connection (502 for a write that may have arrived)', async () => {
    await start();
    behaviour.set('/api/v1/tasks', 'reset');
    const write = await client.action('create_task', { title: 'Review labs' });
    expect(write.status).toBe(502);
    expect(String(write.body['detail'])).toMatch(/unreachable.*check with list_tasks before trying again/);
    expect(await client.ok('status')).toEqual({ status: 'offline' });
  });
});
