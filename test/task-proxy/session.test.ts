/**
 * The proxy over a real socket with a browser-less client (cookie jar): sign-in, sessions, cookie
 * flags, rotation, sign-out, the origin check, the rate limit, field errors, and every action
 * answered from a real SQLite store of the task agent while the agent is unreachable. The agent
 * itself (online answers, equality with the offline ones) is in agent.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { listTasksBody, openTaskStore, statsBody } from '../../services/task-agent/src/store/index.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import { QUEUED_MESSAGE } from '../../services/task-proxy/src/domain/proxy.js';
import { deferred } from '../kit/helpers.js';
import { closedPort } from '../patient-sim/helpers.js';
import {
  ALICE,
  BOB,
  metricValue,
  ProxyClient,
  sleep,
  startProxy,
  until,
  writeUsersFile,
  type Encoding,
  type ProxyTestServer,
} from './helpers.js';

const EVIL = 'http://evil.example';
const CAROL = { username: 'carol', password: 'carol-password' };

let usersFile: string;
let sqlitePath: string;
let seedStore: TaskStore;
let agentUrl: string;
let proxy: ProxyTestServer;

beforeAll(async () => {
  usersFile = await writeUsersFile([ALICE, BOB, CAROL]);
  sqlitePath = join(mkdtempSync(join(tmpdir(), 'task-proxy-store-')), 'task-agent.sqlite');
  // The agent's store, as the agent leaves it: created by the agent's own code, one task in it.
  seedStore = await openTaskStore({ sqlitePath, create: true });
  const t0 = new Date('2026-11-22T08:00:00.000Z');
  const task = await seedStore.createTask(
    { title: 'Summarize discharge notes', description: 'ward 3', priority: 5 },
    t0,
  );
  await seedStore.addLog(task.id, null, 'info', 'created through the API', t0);
  await seedStore.saveSkills([
    { name: 'summarize', description: 'Summarize a text', input_schema: { type: 'object' }, service: null },
  ]);
  agentUrl = `http://127.0.0.1:${String(await closedPort())}`;
  proxy = await startProxy({
    TASK_AGENT_URL: agentUrl,
    TASK_AGENT_DB: sqlitePath,
    TASK_PROXY_USERS_FILE: usersFile,
    TASK_PROXY_ALLOWED_ORIGINS: 'https://emr.example.org',
    TASK_PROXY_LOGIN_MAX_FAILURES: '3',
  });
});

afterAll(async () => {
  await proxy.close();
  await seedStore.close();
});

describe('sign-in page', () => {
  it('serves an accessible HTML form posting username and password to itself, with no external asset', async () => {
    const res = await fetch(`${proxy.url}/login.php`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await res.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toMatch(/<form method="post" action="\/login.php"/);
    expect(html).toMatch(/<label for="username">/);
    expect(html).toMatch(/<input id="username" name="username"[^>]*autocomplete="username"/);
    expect(html).toMatch(
      /<input id="password" name="password" type="password"[^>]*autocomplete="current-password"/,
    );
    expect(html).not.toMatch(/(src|href)="https?:/);
    expect(html).not.toContain('<script');
  });
});

describe('signing in', () => {
  it.each<Encoding>(['json', 'urlencoded', 'multipart'])(
    'accepts %s credentials: {authenticated, user} and an HttpOnly SameSite=Lax PHPSESSID cookie',
    async (encoding) => {
      const client = new ProxyClient(proxy.url);
      const res = await client.login(ALICE, { encoding });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ authenticated: true, user: 'alice' });
      const cookie = client.jar.last('PHPSESSID');
      expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(cookie?.attributes).toEqual({ path: '/', httponly: true, samesite: 'Lax' });
      expect((await client.ok('status')).status).toBe('offline');
    },
  );

  it('answers 401 with one message for a wrong password and for an unknown user, and sets no cookie', async () => {
    const wrong = new ProxyClient(proxy.url);
    const a = await wrong.login({ username: 'bob', password: 'not his password' });
    const unknown = new ProxyClient(proxy.url);
    const b = await unknown.login({ username: 'mallory', password: BOB.password });
    expect(a.status).toBe(401);
    expect(b.status).toBe(401);
    expect(a.body).toEqual({ detail: 'Invalid username or password' });
    expect(b.body).toEqual(a.body);
    expect(wrong.jar.seen).toEqual([]);
    expect(unknown.jar.seen).toEqual([]);
    expect((await wrong.action('status')).status).toBe(401);
  });

  it('answers 400 when a field is missing', async () => {
    const client = new ProxyClient(proxy.url);
    const res = await client.request('POST', '/login.php', { username: 'alice' });
    expect(res.status).toBe(400);
    expect(res.body['detail']).toBe('Enter both username and password');
  });

  it('redirects a browser form (Accept: text/html) to / with 303, which shows who is signed in', async () => {
    const browser = new ProxyClient(proxy.url, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    const res = await browser.login(BOB);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/');
    const home = await browser.request('GET', '/');
    expect(home.status).toBe(200);
    expect(String(home.body['html'])).toContain('Signed in as <strong>bob</strong>');
    // A wrong password shows the form again with the message, as an alert, with 401.
    const again = new ProxyClient(proxy.url, { headers: { accept: 'text/html' } });
    const failed = await again.login({ username: 'bob', password: 'nope' });
    expect(failed.status).toBe(401);
    expect(String(failed.body['html'])).toContain('role="alert"');
    expect(String(failed.body['html'])).toContain('Invalid username or password');
    expect(String(failed.body['html'])).not.toContain('nope');
    // Not signed in: / sends a browser to the sign-in page.
    const anonymous = await again.request('GET', '/');
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/login.php');
  });

  it('rotates the session id at sign-in: the old cookie is worth nothing afterwards', async () => {
    const client = new ProxyClient(proxy.url);
    await client.login(ALICE);
    const first = client.jar.get('PHPSESSID')!;
    await client.login(ALICE); // sends the first cookie along
    const second = client.jar.get('PHPSESSID')!;
    expect(second).not.toBe(first);
    expect((await client.action('status')).status).toBe(200);
    const replay = new ProxyClient(proxy.url);
    replay.jar.set('PHPSESSID', first);
    expect((await replay.action('status')).status).toBe(401);
    // A planted id (session fixation) is not adopted either: the server makes a new one.
    const planted = new ProxyClient(proxy.url);
    planted.jar.set('PHPSESSID', 'A'.repeat(43));
    await planted.login(ALICE);
    expect(planted.jar.get('PHPSESSID')).not.toBe('A'.repeat(43));
  });
});

describe('sessions', () => {
  it('answers 401 JSON without a session, with a forged cookie and with a malformed one', async () => {
    const none = await new ProxyClient(proxy.url).action('list_tasks');
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/^application\/json/);
    expect(String(none.body['detail'])).toContain('/login.php');
    for (const forged of ['x'.repeat(43), 'not-a-session', '', 'A'.repeat(500)]) {
      const client = new ProxyClient(proxy.url);
      client.jar.set('PHPSESSID', forged);
      const res = await client.action('list_tasks');
      expect(res.status).toBe(401);
    }
  });

  it('signs out: the session ends, the cookie is cleared, and replaying it is refused', async () => {
    const client = new ProxyClient(proxy.url);
    await client.login(ALICE);
    const id = client.jar.get('PHPSESSID')!;
    const out = await client.logout();
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ authenticated: false, signed_out: true });
    expect(client.jar.last('PHPSESSID')?.attributes['max-age']).toBe('0');
    expect(client.jar.get('PHPSESSID')).toBeUndefined();
    expect((await client.action('status')).status).toBe(401);
    const replay = new ProxyClient(proxy.url);
    replay.jar.set('PHPSESSID', id);
    expect((await replay.action('status')).status).toBe(401);
    expect((await replay.logout()).body).toEqual({ authenticated: false, signed_out: false });
  });

  it('signs out by GET from this site, not from another', async () => {
    const client = new ProxyClient(proxy.url);
    await client.login(ALICE);
    const refused = await client.request('GET', '/logout.php', undefined, {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(refused.status).toBe(403);
    expect((await client.action('status')).status).toBe(200);
    const res = await client.request('GET', '/logout.php', undefined, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/login.php');
    expect((await client.action('status')).status).toBe(401);
  });
});

describe('origin check', () => {
  it('refuses a sign-in posted from another origin, and creates no session', async () => {
    const client = new ProxyClient(proxy.url);
    const res = await client.login(ALICE, { headers: { origin: EVIL } });
    expect(res.status).toBe(403);
    expect(String(res.body['detail'])).toContain('cross-origin request refused');
    expect(client.jar.seen).toEqual([]);
  });

  it('refuses actions from another origin or a cross-site fetch, even with a valid session', async () => {
    const client = new ProxyClient(proxy.url);
    await client.login(ALICE);
    const before = (await client.ok('get_stats'))['stats'];
    const evil = await client.action('create_task', { title: 'planted' }, { headers: { origin: EVIL } });
    expect(evil.status).toBe(403);
    const null_ = await client.action('create_task', { title: 'planted' }, { headers: { origin: 'null' } });
    expect(null_.status).toBe(403);
    const crossSite = await client.action(
      'create_task',
      { title: 'planted' },
      { headers: { 'sec-fetch-site': 'cross-site' } },
    );
    expect(crossSite.status).toBe(403);
    expect((await client.ok('get_stats'))['stats']).toEqual(before);
  });

  it('lets this origin and TASK_PROXY_ALLOWED_ORIGINS through', async () => {
    const client = new ProxyClient(proxy.url);
    expect((await client.login(ALICE, { headers: { origin: proxy.url } })).status).toBe(200);
    expect(
      (await client.action('status', {}, { headers: { origin: proxy.url, 'sec-fetch-site': 'same-origin' } }))
        .status,
    ).toBe(200);
    expect(
      (await client.action('status', {}, { headers: { origin: 'https://emr.example.org' } })).status,
    ).toBe(200);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After after 3 failures for a username from one address, even for the right password', async () => {
    const client = new ProxyClient(proxy.url);
    const victim = CAROL;
    for (let i = 0; i < 3; i++)
      expect((await client.login({ ...victim, password: `guess-${i}` })).status).toBe(401);
    const limited = await client.login(victim);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(String(limited.body['detail'])).toMatch(/Too many failed sign-ins/);
    expect(client.jar.seen).toEqual([]);
    // Another user from the same address is not locked out by carol's failures.
    expect((await client.login(ALICE)).status).toBe(200);
    expect(
      await metricValue(proxy.url, 'task_proxy_sign_ins_total', { outcome: 'rate_limited' }),
    ).toBeGreaterThanOrEqual(1);
  });
});

describe('behind a proxy that TRUST_PROXY does not name', () => {
  it('counts users behind it apart, keeps the per-username limit, and warns once', async () => {
    const behind = await startProxy({
      TASK_AGENT_URL: agentUrl,
      TASK_PROXY_USERS_FILE: usersFile,
      TASK_PROXY_LOGIN_MAX_FAILURES: '3',
      TASK_PROXY_LOGIN_MAX_FAILURES_PER_IP: '4',
    });
    try {
      // As an ingress forwards them: every request from its address, the client's in the header.
      const via = (client: string) => new ProxyClient(behind.url, { headers: { 'x-forwarded-for': client } });
      const attacker = via('203.0.113.9');
      for (const username of ['alice', 'bob', 'dave', 'erin'])
        expect((await attacker.login({ username, password: 'guess' })).status).toBe(401);
      // The attacker's address is blocked...
      expect((await attacker.login({ username: 'frank', password: 'guess' })).status).toBe(429);
      // ...not the other users behind the same proxy.
      expect((await via('198.51.100.7').login(ALICE)).status).toBe(200);
      expect((await via('198.51.100.8, 198.51.100.20').login(BOB)).status).toBe(200);

      // A forged header does not escape the per-username limit (keyed by the peer alone).
      for (let i = 0; i < 3; i++)
        expect((await via(`192.0.2.${String(i)}`).login({ ...CAROL, password: 'nope' })).status).toBe(401);
      expect((await via('192.0.2.99').login(CAROL)).status).toBe(429);

      const warnings = behind.logs.filter((l) => String(l['msg']).includes('TRUST_PROXY does not name'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 'warn', peer: expect.stringContaining('127.0.0.1') });
    } finally {
      await behind.close();
    }
  });

  it('with TRUST_PROXY naming the proxy, counts the forwarded client and does not warn', async () => {
    const trusted = await startProxy({
      TASK_AGENT_URL: agentUrl,
      TASK_PROXY_USERS_FILE: usersFile,
      TASK_PROXY_LOGIN_MAX_FAILURES_PER_IP: '2',
      TRUST_PROXY: 'loopback',
    });
    try {
      const via = (client: string) =>
        new ProxyClient(trusted.url, { headers: { 'x-forwarded-for': client } });
      for (const username of ['alice', 'bob'])
        expect((await via('203.0.113.9').login({ username, password: 'guess' })).status).toBe(401);
      expect((await via('203.0.113.9').login(ALICE)).status).toBe(429);
      expect((await via('198.51.100.7').login(ALICE)).status).toBe(200);
      expect(trusted.logs.filter((l) => String(l['msg']).includes('TRUST_PROXY'))).toEqual([]);
    } finally {
      await trusted.close();
    }
  });
});

describe('rate limit under a burst', () => {
  it('checks no more passwords than the limit when the tries arrive at once', async () => {
    const client = new ProxyClient(proxy.url);
    // All ten are past the limit check before the first password check ends.
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => client.login({ username: 'trudy', password: `guess-${i}` })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    for (const a of answers.filter((x) => x.status === 429))
      expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The tries in progress ended: once they failed, the window alone says how long to wait.
    const after = await client.login({ username: 'trudy', password: 'again' });
    expect(after.status).toBe(429);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThan(800);
  });
});

describe('sign-ins past the queue of password checks', () => {
  it('shows a browser the sign-in page with the 429 message, answers an API client JSON, and counts both', async () => {
    const busy = await startProxy({
      TASK_AGENT_URL: agentUrl,
      TASK_PROXY_USERS_FILE: usersFile,
      TASK_PROXY_LOGIN_CONCURRENCY: '1',
      MAX_CONCURRENCY: '100', // past the login queue's 64, so that queue is what fills
      TASK_PROXY_LOGIN_MAX_FAILURES: '1000',
      TASK_PROXY_LOGIN_MAX_FAILURES_PER_IP: '1000',
    });
    // Every password check waits until the test lets it go: 1 in work, 64 waiting fill the queue.
    const hold = deferred();
    const users = busy.service.users;
    const check = users.check.bind(users);
    const refresh = users.refresh.bind(users);
    let arrived = 0;
    users.refresh = () => {
      arrived += 1;
      return refresh();
    };
    users.check = async (username, password) => {
      await hold.promise;
      return check(username, password);
    };
    try {
      const api = new ProxyClient(busy.url);
      const held = Array.from({ length: 65 }, (_, i) => api.login({ username: `user${i}`, password: 'x' }));
      await until(() => Promise.resolve(arrived === 65 ? true : undefined));
      await sleep(50);
      const before = await metricValue(busy.url, 'task_proxy_sign_ins_total', { outcome: 'rate_limited' });

      const browser = new ProxyClient(busy.url, { headers: { accept: 'text/html,*/*;q=0.8' } });
      const page = await browser.login({ username: 'bob', password: 'whatever' });
      expect(page.status).toBe(429);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(Number(page.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const html = String(page.body['html']);
      expect(html).toContain('role="alert"');
      expect(html).toMatch(/Too many (requests|sign-ins)/);
      expect(html).toContain('name="password"');
      expect(html).not.toContain('whatever');

      const json = await api.login({ username: 'bob', password: 'whatever' });
      expect(json.status).toBe(429);
      expect(json.headers.get('content-type')).toMatch(/^application\/json/);
      expect(String(json.body['detail'])).toMatch(/Too many/);

      expect(await metricValue(busy.url, 'task_proxy_sign_ins_total', { outcome: 'rate_limited' })).toBe(
        before + 2,
      );
      hold.resolve();
      expect((await Promise.all(held)).map((a) => a.status)).toEqual(Array.from({ length: 65 }, () => 401));
    } finally {
      hold.resolve();
      await busy.close();
    }
  });
});

describe('fields and actions', () => {
  let client: ProxyClient;
  beforeAll(async () => {
    client = new ProxyClient(proxy.url);
    await client.login(ALICE);
  });

  it.each<Encoding>(['urlencoded', 'multipart', 'json'])(
    'lists the valid actions for an unknown one (%s)',
    async (encoding) => {
      const res = await client.action('rm_rf', {}, { encoding });
      expect(res.status).toBe(400);
      expect(res.body['detail']).toBe(
        'unknown action: valid actions are status, chat, list_tasks, get_task, create_task, cancel_task, ' +
          'delete_task, get_task_logs, get_runs, get_stats, get_skills, get_schedules, clear_history',
      );
      const missing = await client.request('POST', '/api/agent_proxy.php', {}, { encoding });
      expect(missing.status).toBe(400);
      expect(String(missing.body['detail'])).toMatch(/^missing action: valid actions are status, chat/);
    },
  );

  it('answers 400 with a clear message for bad fields', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['get_task', { task_id: 'abc' }, /^task_id: must be a task id/],
      ['cancel_task', {}, /^task_id: is required/],
      ['list_tasks', { limit: '0' }, /^limit: must be a whole number from 1 to 500/],
      ['list_tasks', { status: 'finished' }, /^status: .* valid status names: pending, queued, waiting/],
      ['create_task', { title: '' }, /^title: is required/],
      ['create_task', { title: 'x', priority: '11' }, /^priority: must be a whole number from 1 to 10/],
      ['create_task', { title: 'x', priority: 'whenever' }, /^priority:/],
      ['get_runs', { task_id: '2.5' }, /^task_id:/],
      ['create_task', { title: 'x\u0000y' }, /^title: must not contain NUL characters/],
      ['create_task', { title: 'x', description: '\u0000' }, /^description: must not contain NUL/],
      ['chat', { message: 'hi\u0000' }, /^message: must not contain NUL characters/],
    ];
    for (const [action, fields, pattern] of cases) {
      const res = await client.action(action, fields);
      expect([action, res.status]).toEqual([action, 400]);
      expect(String(res.body['detail'])).toMatch(pattern);
    }
  });

  it('refuses other media types (415) and files (400)', async () => {
    const text = await fetch(`${proxy.url}/api/agent_proxy.php`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', cookie: client.jar.header()! },
      body: 'action=status',
    });
    expect(text.status).toBe(415);
    const form = new FormData();
    form.append('action', 'status');
    form.append('file', new Blob(['x']), 'x.txt');
    const upload = await fetch(`${proxy.url}/api/agent_proxy.php`, {
      method: 'POST',
      headers: { cookie: client.jar.header()! },
      body: form,
    });
    expect(upload.status).toBe(400);
  });

  it('limits a multipart body as a whole to BODY_LIMIT (413), with or without a declared length', async () => {
    const limit = proxy.config.BODY_LIMIT;
    const piece = 'x'.repeat(Math.floor(limit / 3) + 1);
    // Each field is under the limit; together they are over it.
    const form = new FormData();
    form.append('action', 'create_task');
    form.append('title', 'Big form');
    for (const name of ['description', 'message', 'note']) form.append(name, piece);
    const encoded = new Response(form);
    const contentType = encoded.headers.get('content-type')!;
    const bytes = new Uint8Array(await encoded.arrayBuffer());
    expect(bytes.length).toBeGreaterThan(limit);
    const post = (
      body: NonNullable<RequestInit['body']>,
      extra: Record<string, string> = {},
    ): Promise<Response> =>
      fetch(`${proxy.url}/api/agent_proxy.php`, {
        method: 'POST',
        headers: { cookie: client.jar.header()!, 'content-type': contentType, ...extra },
        body,
        duplex: 'half',
      });
    const declared = await post(bytes);
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { detail: string }).detail).toBe(
      `Request body exceeds the limit of ${limit} bytes`,
    );
    // Chunked: no Content-Length, counted as it arrives.
    const chunked = await post(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 16_384) controller.enqueue(bytes.subarray(i, i + 16_384));
          controller.close();
        },
      }),
    );
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { detail: string }).detail).toBe(
      `Request body exceeds the limit of ${limit} bytes`,
    );
    // The proxy still answers on the next request, and a form under the limit passes.
    expect(await client.action('status', {}, { encoding: 'multipart' })).toMatchObject({ status: 200 });
    const tasks = (await client.ok('list_tasks'))['tasks'] as { title: string }[];
    expect(tasks.map((t) => t.title)).not.toContain('Big form');
  });

  it('answers every action from the store while the agent is unreachable', async () => {
    expect(await client.ok('status')).toEqual({ status: 'offline' });
    // Reads: the bodies the agent's own query functions give from the same store.
    const tasks = await client.action('list_tasks');
    expect(tasks.headers.get('x-task-proxy-source')).toBe('store');
    expect(tasks.body).toEqual(JSON.parse(JSON.stringify(await listTasksBody(seedStore, {}))));
    const first = (tasks.body['tasks'] as { id: number; title: string }[]).at(-1)!;
    expect(first.title).toBe('Summarize discharge notes');
    const detail = await client.ok('get_task', { task_id: first.id });
    expect(Object.keys(detail).sort()).toEqual(['logs', 'runs', 'task']);
    expect(detail['task']).toMatchObject({ id: first.id, status: 'pending' });
    expect(await client.action('get_task', { task_id: 999_999 })).toMatchObject({
      status: 404,
      body: { detail: 'Task 999999 not found' },
    });
    // create_task is queued in the store.
    const created = await client.ok('create_task', {
      title: 'Check INR trend',
      description: 'bed 12',
      priority: 'high',
    });
    expect(created).toEqual({
      id: expect.any(Number),
      status: 'pending',
      queued: true,
      message: QUEUED_MESSAGE,
    });
    const stored = await seedStore.getTask(created['id'] as number);
    expect(stored).toMatchObject({
      title: 'Check INR trend',
      description: 'bed 12',
      priority: 8,
      status: 'pending',
    });
    const logs = await client.ok('get_task_logs', { task_id: created['id'] });
    expect((logs['logs'] as { message: string }[]).map((l) => l.message)).toEqual([
      'created through the task proxy while the agent was offline (queued)',
    ]);
    expect(await client.ok('get_runs', { task_id: created['id'] })).toEqual({ runs: [] });
    // cancel_task is applied in the store; a second cancel is 409 as the agent answers it.
    expect(await client.ok('cancel_task', { task_id: created['id'] })).toEqual({ cancelled: true });
    expect((await seedStore.getTask(created['id'] as number))?.status).toBe('cancelled');
    const again = await client.action('cancel_task', { task_id: created['id'] });
    expect(again.status).toBe(409);
    expect(again.body['detail']).toBe(
      `Task ${String(created['id'])} is already cancelled: only pending or running tasks can be cancelled`,
    );
    expect(await client.ok('get_stats')).toEqual(JSON.parse(JSON.stringify(await statsBody(seedStore))));
    expect(await client.ok('list_tasks', { status: 'canceled' })).toMatchObject({
      tasks: [{ id: created['id'], status: 'cancelled' }],
    });
    expect(await client.ok('get_skills')).toEqual({
      skills: [
        {
          name: 'summarize',
          description: 'Summarize a text',
          input_schema: { type: 'object' },
          service: null,
        },
      ],
    });
    expect(await client.ok('get_schedules')).toEqual({ schedules: [] });
    // Chat history lives in the store: cleared there.
    await seedStore.appendChat('s-1', [{ role: 'user', content: 'hello' }], new Date());
    expect(await client.ok('clear_history', { session_id: 's-1' })).toEqual({ cleared: true });
    expect(await client.ok('clear_history', { session_id: 's-1' })).toEqual({ cleared: false });
    // Chat needs the agent.
    const chat = await client.action('chat', { message: 'hello' });
    expect(chat.status).toBe(503);
    expect(String(chat.body['detail'])).toMatch(
      /^The task agent is offline \(.*ECONNREFUSED.*\): chat works only while it is online/,
    );
    expect(await metricValue(proxy.url, 'task_proxy_offline_answers_total', { action: 'create_task' })).toBe(
      1,
    );
    expect(
      await metricValue(proxy.url, 'task_proxy_actions_total', { action: 'chat', outcome: 'unavailable' }),
    ).toBe(1);
  });
});

describe('health, metrics and logs', () => {
  it('reports itself healthy with the agent offline and the store it answers from', async () => {
    const res = await fetch(`${proxy.url}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 'healthy',
      service: 'task-proxy',
      agent: { url: agentUrl, state: 'offline' },
      store: { kind: 'sqlite', ok: true, detail: null },
      users: 3,
    });
    expect((body['agent'] as { detail: string }).detail).toContain('ECONNREFUSED');
  });

  it('exposes task_proxy_ metrics with bounded labels', async () => {
    const text = await (await fetch(`${proxy.url}/metrics`)).text();
    for (const name of [
      'task_proxy_actions_total',
      'task_proxy_sign_ins_total',
      'task_proxy_sessions',
      'task_proxy_upstream_online',
      'task_proxy_offline_answers_total',
      'task_proxy_sessions_ended_total',
    ])
      expect(text).toContain(`# TYPE ${name} `);
    expect(await metricValue(proxy.url, 'task_proxy_upstream_online')).toBe(0);
    expect(await metricValue(proxy.url, 'task_proxy_sign_ins_total', { outcome: 'success' })).toBeGreaterThan(
      3,
    );
    expect(
      await metricValue(proxy.url, 'task_proxy_actions_total', { action: 'unknown', outcome: 'bad_request' }),
    ).toBeGreaterThan(0);
    expect(text).not.toContain('rm_rf');
    expect(text).not.toContain('alice');
  });

  it('never logs passwords or session ids', async () => {
    const client = new ProxyClient(proxy.url);
    await client.login(ALICE);
    const all = JSON.stringify(proxy.logs);
    expect(all).not.toContain(ALICE.password);
    expect(all).not.toContain(BOB.password);
    expect(all).not.toContain(client.jar.get('PHPSESSID')!);
    expect(all).not.toContain('bed 12');
  });
});

describe('configurations', () => {
  it('marks the cookie Secure only behind TLS: X-Forwarded-Proto counts with TRUST_PROXY only', async () => {
    const behindTls = await startProxy({
      TASK_AGENT_URL: agentUrl,
      TASK_PROXY_USERS_FILE: usersFile,
      TRUST_PROXY: 'loopback',
    });
    const direct = await startProxy({ TASK_AGENT_URL: agentUrl, TASK_PROXY_USERS_FILE: usersFile });
    try {
      const https = { 'x-forwarded-proto': 'https' };
      const trusted = new ProxyClient(behindTls.url);
      await trusted.login(ALICE, { headers: https });
      expect(trusted.jar.last('PHPSESSID')?.attributes).toEqual({
        path: '/',
        httponly: true,
        samesite: 'Lax',
        secure: true,
      });
      const plain = new ProxyClient(behindTls.url);
      await plain.login(ALICE);
      expect(plain.jar.last('PHPSESSID')?.attributes['secure']).toBeUndefined();
      const untrusted = new ProxyClient(direct.url);
      await untrusted.login(ALICE, { headers: https });
      expect(untrusted.jar.last('PHPSESSID')?.attributes['secure']).toBeUndefined();
      // Behind TLS the proxy's own origin is https://…
      const host = new URL(behindTls.url).host;
      const viaTls = new ProxyClient(behindTls.url);
      expect((await viaTls.login(ALICE, { headers: { ...https, origin: `https://${host}` } })).status).toBe(
        200,
      );
      expect((await viaTls.logout({ headers: { ...https, origin: `https://${host}` } })).status).toBe(200);
      expect(viaTls.jar.last('PHPSESSID')?.attributes['secure']).toBe(true);
      expect(
        (await new ProxyClient(direct.url).login(ALICE, { headers: { origin: `https://${host}` } })).status,
      ).toBe(403);
    } finally {
      await behindTls.close();
      await direct.close();
    }
  });

  it('ends a session after the idle time', async () => {
    let now = Date.parse('2026-11-22T09:00:00Z');
    const timed = await startProxy(
      {
        TASK_AGENT_URL: agentUrl,
        TASK_PROXY_USERS_FILE: usersFile,
        TASK_PROXY_SESSION_IDLE_S: '60',
        TASK_PROXY_SESSION_MAX_S: '120',
      },
      { now: () => now },
    );
    try {
      const client = new ProxyClient(timed.url);
      await client.login(ALICE);
      now += 59_000;
      expect((await client.action('status')).status).toBe(200);
      now += 59_000;
      expect((await client.action('status')).status).toBe(200);
      now += 10_000; // 128 s after sign-in: past the absolute limit
      expect((await client.action('status')).status).toBe(401);
      await client.login(ALICE);
      now += 61_000;
      expect((await client.action('status')).status).toBe(401);
      expect(await metricValue(timed.url, 'task_proxy_sessions_ended_total', { reason: 'expired' })).toBe(2);
    } finally {
      await timed.close();
    }
  });

  it('without a store: status works, offline queries answer 503 naming what to configure', async () => {
    const bare = await startProxy({ TASK_AGENT_URL: agentUrl, TASK_PROXY_USERS_FILE: usersFile });
    try {
      const client = new ProxyClient(bare.url);
      await client.login(ALICE);
      expect(await client.ok('status')).toEqual({ status: 'offline' });
      const res = await client.action('list_tasks');
      expect(res.status).toBe(503);
      expect(String(res.body['detail'])).toMatch(/no store is configured .*DATABASE_URL.*TASK_AGENT_DB/);
      const health = (await (await fetch(`${bare.url}/health`)).json()) as { store: unknown };
      expect(health.store).toEqual({ kind: 'none', ok: null, detail: null });
    } finally {
      await bare.close();
    }
  });

  it('signs in the user of TASK_PROXY_USER / TASK_PROXY_PASSWORD (hashed at start)', async () => {
    const envUser = await startProxy({
      TASK_AGENT_URL: agentUrl,
      TASK_PROXY_USER: 'admin',
      TASK_PROXY_PASSWORD: 'first-user-pw',
    });
    try {
      expect(envUser.config).not.toHaveProperty('TASK_PROXY_PASSWORD');
      const client = new ProxyClient(envUser.url);
      expect((await client.login({ username: 'admin', password: 'wrong' })).status).toBe(401);
      expect((await client.login({ username: 'admin', password: 'first-user-pw' })).body).toEqual({
        authenticated: true,
        user: 'admin',
      });
    } finally {
      await envUser.close();
    }
  });

  it('is not ready (503 with the reason) while the users file cannot be read, and ready once it can', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'task-proxy-late-'));
    const late = join(dir, 'users.txt');
    const waiting = await startProxy({ TASK_AGENT_URL: agentUrl, TASK_PROXY_USERS_FILE: late });
    try {
      const health = await fetch(`${waiting.url}/health`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { reason: string }).reason).toContain('TASK_PROXY_USERS_FILE');
      expect((await new ProxyClient(waiting.url).login(ALICE)).status).toBe(503);
      // A malformed request is refused as such while not ready too.
      const blank = await new ProxyClient(waiting.url).login({ username: 'alice', password: '' });
      expect(blank.status).toBe(400);
      expect((await new ProxyClient(waiting.url).action('list_tasks')).status).toBe(401);
      writeFileSync(late, '');
      await writeUsersFile([ALICE], late);
      const { until } = await import('./helpers.js');
      await until(
        async () => ((await fetch(`${waiting.url}/health`)).status === 200 ? true : undefined),
        5000,
      );
      expect((await new ProxyClient(waiting.url).login(ALICE)).status).toBe(200);
    } finally {
      await waiting.close();
    }
  });
});
