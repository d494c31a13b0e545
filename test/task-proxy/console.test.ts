/**
 * The console's pages over a real socket, without a browser: the escaping function, the language
 * choice, and the pages a signed-in client gets from the proxy answering from a real SQLite store
 * of the task agent (the agent unreachable): hostile task text stays text, signed-out requests get
 * only the sign-in page, a cross-site form is refused, the CSP forbids inline script. The console
 * in a real browser, in front of the real agent, is console.browser.test.ts.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { openTaskStore } from '../../services/task-agent/src/store/index.js';
import type { TaskStore } from '../../services/task-agent/src/store/types.js';
import { escapeHtml, Html, markup } from '../../services/task-proxy/src/console/html.js';
import { chooseLang, fromAcceptLanguage } from '../../services/task-proxy/src/console/i18n.js';
import { closedPort } from '../patient-sim/helpers.js';
import { ALICE, ProxyClient, startProxy, writeUsersFile, type ProxyTestServer } from './helpers.js';

const HOSTILE = `<script>alert(1)</script><img src=x onerror="alert('x')"> & "quoted"`;

describe('html', () => {
  it('escapes the five characters that can start markup or end an attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
    );
  });

  it('escapes every interpolated value but its own markup, in lists too', () => {
    const cell = markup`<td title="${HOSTILE}">${HOSTILE}</td>`;
    expect(cell.value).not.toMatch(/<script|<img|"alert/);
    expect(cell.value).toContain('&lt;script&gt;');
    const list = markup`<ul>${['<b>', markup`<li>${'<i>'}</li>`, 7, null, undefined, false]}</ul>`;
    expect(list.value).toBe('<ul>&lt;b&gt;<li>&lt;i&gt;</li>7</ul>');
    expect(markup`${new Html('<br>')}`.value).toBe('<br>');
  });
});

describe('language', () => {
  it('reads Accept-Language by quality, English when it names neither', () => {
    expect(fromAcceptLanguage('vi-VN,vi;q=0.9,en;q=0.8')).toBe('vi');
    expect(fromAcceptLanguage('en-US,vi;q=0.5')).toBe('en');
    expect(fromAcceptLanguage('fr-FR,vi;q=0.4')).toBe('vi');
    expect(fromAcceptLanguage('fr-FR,de')).toBe('en');
    expect(fromAcceptLanguage('vi;q=0')).toBe('en');
    expect(fromAcceptLanguage(undefined)).toBe('en');
  });

  it('prefers the switch, then the cookie, then the header', () => {
    expect(chooseLang('vi', 'en', 'en')).toBe('vi');
    expect(chooseLang(undefined, 'vi', 'en')).toBe('vi');
    expect(chooseLang('xx', 'yy', 'vi')).toBe('vi');
  });
});

describe('the console over HTTP (agent offline, its SQLite store)', () => {
  let store: TaskStore;
  let proxy: ProxyTestServer;
  let client: ProxyClient;
  let hostileId: number;
  const browser = { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' };
  const get = async (path: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${proxy.url}${path}`, {
      headers: { ...browser, cookie: client.jar.header() ?? '', ...headers },
      redirect: 'manual',
    });

  beforeAll(async () => {
    const sqlitePath = join(mkdtempSync(join(tmpdir(), 'task-proxy-console-')), 'task-agent.sqlite');
    store = await openTaskStore({ sqlitePath, create: true });
    const t0 = new Date('2026-12-01T08:00:00.000Z');
    const task = await store.createTask({ title: HOSTILE, description: HOSTILE, priority: 8 }, t0);
    hostileId = task.id;
    await store.addLog(task.id, null, 'warn', HOSTILE, t0);
    for (let i = 1; i <= 25; i++)
      await store.createTask(
        { title: `Task number ${i}`, description: '', priority: 5 },
        new Date(t0.getTime() + i * 1000),
      );
    proxy = await startProxy({
      TASK_AGENT_URL: `http://127.0.0.1:${String(await closedPort())}`,
      TASK_AGENT_DB: sqlitePath,
      TASK_PROXY_USERS_FILE: await writeUsersFile([ALICE]),
    });
    client = new ProxyClient(proxy.url);
    expect((await client.login(ALICE)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await proxy.close();
    await store.close();
  });

  it('sends a signed-out browser to the sign-in page from every console page and form', async () => {
    const anonymous = { cookie: '' };
    for (const path of ['/', '/task.php?id=1', '/?status=running']) {
      const res = await get(path, anonymous);
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/login.php');
    }
    const post = await fetch(`${proxy.url}/api/agent_proxy.php`, {
      method: 'POST',
      headers: browser,
      body: new URLSearchParams({ action: 'create_task', title: 'x' }),
      redirect: 'manual',
    });
    expect(post.status).toBe(303);
    expect(post.headers.get('location')).toBe('/login.php');
    expect((await store.listTasks({ limit: 500 })).some((t) => t.title === 'x')).toBe(false);
  });

  it('shows the list newest first in pages, with the offline banner and hostile text as text', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    const page = await res.text();
    expect(page).toMatch(/<p class="banner" id="agent-banner" role="status"[^>]*>The task agent is offline/);
    expect(page).not.toMatch(/<script>|<img src=x/);
    expect(page).not.toMatch(/<script(?! src="\/console\.js" defer><\/script>)/);
    // 26 tasks, 20 a page: the newest first, a next page.
    const titles = [...page.matchAll(/<a href="\/task\.php\?id=\d+">([^<]*)<\/a>/g)].map((m) => m[1]);
    expect(titles).toHaveLength(20);
    expect(titles[0]).toBe('Task number 25');
    expect(page).toContain('<a href="/?page=2" rel="next">');
    const second = await (await get('/?page=2')).text();
    const rest = [...second.matchAll(/<a href="\/task\.php\?id=\d+">([^<]*)<\/a>/g)].map((m) => m[1]);
    expect(rest.at(-1)).toBe(escapeHtml(HOSTILE));
    expect(rest).toHaveLength(6);
    expect(second).toContain('rel="prev"');
    // Chat needs the agent: no chat form while it is offline.
    expect(page).not.toContain('id="chat-form"');
  });

  it('shows a task with its logs, the hostile text escaped, in Vietnamese when asked', async () => {
    const res = await get(`/task.php?id=${hostileId}`, { 'accept-language': 'vi-VN,vi;q=0.9' });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<html lang="vi">');
    expect(page).toContain('Nhật ký');
    expect(page).toContain(escapeHtml(HOSTILE));
    expect(page).not.toContain(HOSTILE);
    expect(page).toContain('name="action" value="cancel_task"');
    const missing = await get('/task.php?id=9999');
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('Task 9999 not found');
  });

  it('keeps the switched language in a cookie', async () => {
    const res = await get('/?lang=vi');
    expect(res.headers.get('set-cookie')).toMatch(/^lang=vi; Path=\/; HttpOnly; SameSite=Lax/);
    expect(await res.text()).toContain('<a href="/?lang=en" hreflang="en" lang="en">English</a>');
    const next = await get('/', { cookie: `${client.jar.header() ?? ''}; lang=vi` });
    expect(await next.text()).toContain('<html lang="vi">');
  });

  it('runs a browser form through the API and redirects; a cross-site form is refused', async () => {
    const form = (origin: string): Promise<Response> =>
      fetch(`${proxy.url}/api/agent_proxy.php`, {
        method: 'POST',
        headers: { ...browser, cookie: client.jar.header() ?? '', origin },
        body: new URLSearchParams({ action: 'create_task', title: 'From the form', priority: '8' }),
        redirect: 'manual',
      });
    const evil = await form('http://evil.example');
    expect(evil.status).toBe(403);
    expect((await store.listTasks({ limit: 500 })).some((t) => t.title === 'From the form')).toBe(false);
    const ok = await form(proxy.url);
    expect(ok.status).toBe(303);
    const created = (await store.listTasks({ limit: 1 }))[0];
    expect(created?.title).toBe('From the form');
    expect(ok.headers.get('location')).toBe(`/task.php?id=${created?.id}&queued=1`);
    // A bad field: the message on a page, with its status.
    const bad = await fetch(`${proxy.url}/api/agent_proxy.php`, {
      method: 'POST',
      headers: { ...browser, cookie: client.jar.header() ?? '' },
      body: new URLSearchParams({ action: 'create_task', title: '  ' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await bad.text()).toContain('title: is required and must not be empty');
  });

  it('cancels from a form, and shows a refused cancel on a page that leads back to the task', async () => {
    const cancel = (): Promise<Response> =>
      fetch(`${proxy.url}/api/agent_proxy.php`, {
        method: 'POST',
        headers: { ...browser, cookie: client.jar.header() ?? '', origin: proxy.url },
        body: new URLSearchParams({ action: 'cancel_task', task_id: String(hostileId) }),
        redirect: 'manual',
      });
    const first = await cancel();
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe(`/task.php?id=${hostileId}&cancelled=1`);
    const again = await cancel();
    expect(again.status).toBe(409);
    const page = await again.text();
    expect(page).toMatch(/<p class="error" role="alert">[^<]*cancelled/);
    expect(page).toContain(`<a href="/task.php?id=${hostileId}">Task ${hostileId}</a>`);
  });

  it('serves its script as a file, and API clients still get JSON', async () => {
    const js = await fetch(`${proxy.url}/console.js`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).toContain('/api/agent_proxy.php');
    const root = await fetch(`${proxy.url}/`, { headers: { cookie: client.jar.header() ?? '' } });
    expect(((await root.json()) as { authenticated: boolean }).authenticated).toBe(true);
    const answer = await client.action('list_tasks', { limit: 1 });
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  });
});
