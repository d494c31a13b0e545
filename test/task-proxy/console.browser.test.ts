/**
 * The console in a real browser (Debian's chromium, headless, driven by puppeteer-core) in front of
 * the real task agent (the built agent as a process, on SQLite, running tasks with the real text
 * LLM on the tiny model): a signed-out browser gets only the sign-in page; signing in with the
 * keyboard; creating a task that runs to its result with its logs followed live; the chat; a
 * second task cancelled from a page without JavaScript; the language switch; a cross-site form
 * refused; the offline banner once the agent is killed, with tasks, runs and logs still shown from
 * the store; signing out. axe-core checks every state for accessibility violations, and any CSP
 * violation or script error fails the test. It screenshots every state: into a temporary
 * directory (its path is printed), or, with UPDATE_SCREENSHOTS=1, into services/task-proxy/docs/,
 * the pictures the README shows (so a plain test run leaves the tree as it was).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { describeReal } from '../fixtures/real-component.js';
import { occupyLlm, startLlm, type LlmTestServer } from '../llm/helpers.js';
import { TASK_AGENT_TOKEN, tempSqlitePath } from '../task-agent/helpers.js';
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

const CHROMIUM =
  process.env['CHROMIUM_PATH'] ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)) ??
  '/usr/bin/chromium';
const missing = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} is absent (apt-get install chromium, or set CHROMIUM_PATH)`;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const DOCS =
  process.env['UPDATE_SCREENSHOTS'] === '1'
    ? new URL('../../services/task-proxy/docs/', import.meta.url).pathname
    : `${mkdtempSync(join(tmpdir(), 'console-screenshots-'))}/`;
console.log(`console screenshots: ${DOCS}`);

/** The little of the DOM the page functions touch (the tests compile without the DOM library). */
interface El {
  readonly textContent: string | null;
  readonly className: string;
  readonly hidden: boolean;
  readonly lang: string;
  getAttribute(name: string): string | null;
}
interface Doc {
  querySelectorAll(selector: string): { readonly length: number };
}

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

describeReal(missing, 'the task console in a real browser', () => {
  jest.setTimeout(60_000);
  let llm: LlmTestServer;
  let agent: AgentProcess;
  let proxy: ProxyTestServer;
  let api: ProxyClient;
  let browser: Browser;
  let page: Page;
  let evil: Server;
  let evilUrl: string;
  const problems: string[] = [];
  /** What beforeAll started, stopped in reverse order. */
  const stops: (() => Promise<unknown>)[] = [];

  const url = (path: string): string => `${proxy.url}${path}`;
  const path = (p: Page = page): string => new URL(p.url()).pathname;

  /** axe-core in the page: no violation of any rule it runs (WCAG 2.x A/AA and best practices). */
  async function accessible(state: string, p: Page = page): Promise<void> {
    await p.evaluate(AXE);
    const violations = await p.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (ctx: unknown) => Promise<unknown> } }).axe;
      const result = (await axe.run((globalThis as unknown as { document: Doc }).document)) as {
        violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
      };
      return result.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n) => n.target.join(' ')),
      }));
    });
    expect({ state, violations }).toEqual({ state, violations: [] as Violation[] });
  }

  async function screenshot(name: string, p: Page = page): Promise<void> {
    await p.screenshot({ path: `${DOCS}${name}.png`, type: 'png' });
  }

  function watch(p: Page): Page {
    p.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    p.on('pageerror', (error) => problems.push(`script error: ${String(error)}`));
    p.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    return p;
  }

  async function submit(p: Page, selector: string): Promise<number | undefined> {
    const [response] = await Promise.all([p.waitForNavigation(), p.click(selector)]);
    return response?.status();
  }

  beforeAll(async () => {
    mkdirSync(DOCS, { recursive: true });
    const storeVars = { TASK_AGENT_DB: tempSqlitePath() };
    llm = await startLlm({ MAX_CONCURRENCY: '1', QUEUE_SIZE: '16' });
    stops.push(() => llm.close());
    agent = await startAgentProcess({ LLM_URL: llm.url, ...storeVars }, await freePort());
    stops.push(() => agent.kill());
    proxy = await startProxy({
      TASK_AGENT_URL: agent.url,
      TASK_AGENT_API_TOKEN: TASK_AGENT_TOKEN,
      TASK_PROXY_USERS_FILE: await writeUsersFile([ALICE]),
      ...storeVars,
    });
    stops.push(() => proxy.close());
    api = new ProxyClient(proxy.url);
    expect((await api.login(ALICE)).status).toBe(200);
    // Another origin on the same host (same site: the browser sends the session cookie, so only
    // the proxy's Origin check stands between this page and the user's session).
    evil = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><title>Elsewhere</title>
<form method="post" action="${proxy.url}/api/agent_proxy.php">
<input type="hidden" name="action" value="create_task"><input type="hidden" name="title" value="Planted by another site">
<button id="go">Win a prize</button></form></html>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    stops.push(() => new Promise((resolve) => evil.close(resolve)));
    const address = evil.address();
    evilUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/`;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--lang=en-GB'],
    });
    stops.push(() => browser.close());
    page = watch(await browser.newPage());
    await page.setViewport({ width: 1200, height: 900 });
    await page.setExtraHTTPHeaders({ 'accept-language': 'en-GB,en;q=0.9' });
  }, 90_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  it('shows a signed-out browser only the sign-in page', async () => {
    for (const p of ['/', '/task.php?id=1', '/?status=running']) {
      await page.goto(url(p));
      expect(path()).toBe('/login.php');
    }
    expect(await page.$eval('h1', (h: El) => h.textContent)).toBe('Sign in to the task agent');
    await accessible('sign-in');
    await screenshot('console-sign-in');
  });

  let doneId: number;

  it('signs in with the keyboard and runs a task to its result, following its logs', async () => {
    // The username field has the focus; Tab to the password, Enter submits.
    await page.keyboard.type(ALICE.username);
    await page.keyboard.press('Tab');
    await page.keyboard.type(ALICE.password);
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(path()).toBe('/');
    expect(await page.$eval('h1', (h: El) => h.textContent)).toBe('Tasks');
    expect(await page.$eval('#agent-banner', (b: El) => b.hidden)).toBe(true);
    await accessible('empty console');

    await page.type('#title', 'List the red flags of chest pain');
    await page.type('#description', 'For the triage nurses of ward 3.');
    await page.select('#priority', '8');
    expect(await submit(page, '#create-form button[type=submit]')).toBe(200);
    expect(path()).toBe('/task.php');
    doneId = Number(new URL(page.url()).searchParams.get('id'));
    expect(await page.$eval('.notice', (n: El) => n.textContent)).toBe(`Task ${doneId} created.`);
    // The script follows the task until it ends: status, runs and log lines appear without a reload.
    await page.waitForSelector('#task-live[data-status="done"], #task-live[data-status="failed"]', {
      timeout: 60_000,
    });
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: Doc }).document.querySelectorAll('#runs tbody tr').length > 0,
    );
    const logs = await page.$$eval('#logs li .text', (items: El[]) => items.map((i: El) => i.textContent));
    expect(logs).toContain('created through the API');
    expect(logs.length).toBeGreaterThan(1);
    const status = await page.$eval('#task-live', (d: El) => d.getAttribute('data-status'));
    const runStatus = await page.$eval('#runs tbody tr .badge', (b: El) => b.getAttribute('data-status'));
    expect(runStatus).toBe(status);
    if (status === 'done') expect(await page.$eval('#result', (r: El) => r.textContent)).not.toBe('');
    // The page the server renders now says the same (no script needed to see it).
    const detail = (await api.ok('get_task', { task_id: doneId })) as { task: { status: string } };
    expect(detail.task.status).toBe(status);
    await accessible('task finished');
    await screenshot('console-task');
  });

  it('cancels another task from pages without JavaScript', async () => {
    // The LLM busy: the new task cannot finish before it is cancelled.
    const busy = occupyLlm(llm.url);
    const plain = page;
    try {
      await plain.setJavaScriptEnabled(false);
      await plain.goto(url('/'));
      await plain.type('#title', 'Draft the discharge letter for bed 12');
      expect(await submit(plain, '#create-form button[type=submit]')).toBe(200);
      const id = Number(new URL(plain.url()).searchParams.get('id'));
      expect(['pending', 'running']).toContain(
        await plain.$eval('#task-live', (d: El) => d.getAttribute('data-status')),
      );
      expect(await submit(plain, 'form.cancel button')).toBe(200);
      expect(new URL(plain.url()).searchParams.get('cancelled')).toBe('1');
      expect(await plain.$eval('.notice', (n: El) => n.textContent)).toBe(`Task ${id} cancelled.`);
      expect(await plain.$eval('#task-live', (d: El) => d.getAttribute('data-status'))).toBe('cancelled');
      expect(await plain.$('form.cancel')).toBeNull();
      // The list, filtered by status group without script.
      await plain.goto(url('/'));
      await plain.select('#status-filter', 'cancelled');
      expect(await submit(plain, '.filters button')).toBe(200);
      const titles = await plain.$$eval('#tasks tbody a', (as: El[]) => as.map((a: El) => a.textContent));
      expect(titles).toEqual(['Draft the discharge letter for bed 12']);
    } finally {
      busy.release();
      await busy.done;
      await plain.setJavaScriptEnabled(true);
    }
    // axe needs script (its timers); the page stays as the server rendered it.
    await accessible('filtered list without script');
  });

  it('chats with the agent while it is online', async () => {
    await page.goto(url('/'));
    await page.type('#chat-message', 'Which vital signs matter most in sepsis?');
    await page.click('#chat-form button[type=submit]');
    await page.waitForSelector('#chat-log li.agent', { timeout: 30_000 });
    expect(path()).toBe('/');
    const lines = await page.$$eval('#chat-log li', (items: El[]) => items.map((i: El) => i.className));
    expect(lines).toEqual(['', 'agent']);
    expect(await page.$$eval('#tasks tbody tr', (rows: El[]) => rows.length)).toBe(2);
    await accessible('chat');
    await screenshot('console-tasks');
    // Without script the form posts to the API, which answers with a page holding the answer.
    await page.setJavaScriptEnabled(false);
    try {
      await page.goto(url('/'));
      await page.type('#chat-message', 'And in children?');
      expect(await submit(page, '#chat-form button[type=submit]')).toBe(200);
      expect(path()).toBe('/api/agent_proxy.php');
      expect(await page.$$eval('.chatlog li', (items: El[]) => items.map((i: El) => i.className))).toEqual([
        '',
        'agent',
      ]);
      expect(
        await page.$eval('#chat-form input[name=session_id]', (i: El) => i.getAttribute('value')),
      ).not.toBe('');
    } finally {
      await page.setJavaScriptEnabled(true);
    }
  });

  it('switches to Vietnamese and back', async () => {
    await page.goto(url('/'));
    await Promise.all([page.waitForNavigation(), page.click('a[hreflang="vi"]')]);
    expect(await page.$eval('html', (h: El) => h.lang)).toBe('vi');
    expect(await page.$eval('h1', (h: El) => h.textContent)).toBe('Công việc');
    await page.goto(url(`/task.php?id=${doneId}`));
    expect(await page.$eval('#logs-heading', (h: El) => h.textContent)).toBe('Nhật ký');
    await accessible('Vietnamese task page');
    await screenshot('console-task-vi');
    await Promise.all([page.waitForNavigation(), page.click('a[hreflang="en"]')]);
    expect(await page.$eval('html', (h: El) => h.lang)).toBe('en');
  });

  it('refuses a form another site posts with the user’s cookie', async () => {
    const other = watch(await browser.newPage());
    await other.bringToFront();
    try {
      await other.goto(evilUrl);
      const [response] = await Promise.all([other.waitForNavigation(), other.click('#go')]);
      expect(response?.status()).toBe(403);
      expect(await other.content()).toContain('cross-origin request refused');
    } finally {
      await other.close();
    }
    await page.bringToFront();
    const tasks = ((await api.ok('list_tasks')) as { tasks: { title: string }[] }).tasks;
    expect(tasks.map((t) => t.title)).not.toContain('Planted by another site');
    // The refusal is a 403 the browser logs; it is expected, not a page problem.
    const expected = problems.filter((p) => p.includes('403'));
    expect(expected.length).toBeGreaterThan(0);
    problems.splice(0, problems.length, ...problems.filter((p) => !p.includes('403')));
  });

  it('shows the offline banner once the agent is down, with tasks, runs and logs from the store', async () => {
    await page.goto(url('/'));
    await agent.kill();
    await until(
      async () => ((await api.ok('status'))['status'] === 'offline' ? true : undefined),
      10_000,
      'the proxy sees the agent offline',
    );
    // The open page's script notices by itself (it asks for the status every 5 s).
    await page.waitForSelector('#agent-banner:not([hidden])', { timeout: 10_000 });
    await page.reload();
    expect(await page.$eval('#agent-banner', (b: El) => b.textContent)).toContain(
      'The task agent is offline',
    );
    expect(await page.$$eval('#tasks tbody tr', (rows: El[]) => rows.length)).toBe(2);
    expect(await page.$('#chat-form')).toBeNull();
    await accessible('offline console');
    await screenshot('console-offline');
    await page.goto(url(`/task.php?id=${doneId}`));
    expect(await page.$eval('#agent-banner', (b: El) => b.hidden)).toBe(false);
    expect(await page.$$eval('#runs tbody tr', (rows: El[]) => rows.length)).toBeGreaterThan(0);
    expect(await page.$$eval('#logs li', (items: El[]) => items.length)).toBeGreaterThan(1);
    await accessible('offline task page');
  });

  it('signs out, and the console is gone', async () => {
    expect(await submit(page, 'header form button')).toBe(200);
    expect(path()).toBe('/login.php');
    await page.goto(url('/'));
    expect(path()).toBe('/login.php');
    expect(problems).toEqual([]);
  });
});
