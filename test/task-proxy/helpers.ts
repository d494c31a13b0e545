import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { hashPassword } from '../../services/task-proxy/src/adapters/passwords.js';
import { buildTaskProxyApp, type TaskProxyService } from '../../services/task-proxy/src/app.js';
import { loadTaskProxyConfig, type TaskProxyConfig } from '../../services/task-proxy/src/config.js';
import { captureLogs, waitFor } from '../kit/helpers.js';
import { TEST_ENV } from '../task-agent/helpers.js';
import { until } from '../kit/helpers.js';

/** Test users (hashed at a low scrypt cost, N=2^10, so a sign-in takes a millisecond). */
export const ALICE = { username: 'alice', password: 'correct horse battery staple' };
export const BOB = { username: 'bob', password: 'Tr0ub4dor&3 ✓ mật khẩu' };
export const FAST_SCRYPT = { N: 2 ** 10, r: 8, p: 1 };

/** A users file holding `users` (scrypt lines), in a fresh temp directory. */
export async function writeUsersFile(
  users: readonly { username: string; password: string }[] = [ALICE, BOB],
  file = join(mkdtempSync(join(tmpdir(), 'task-proxy-users-')), 'users.txt'),
): Promise<string> {
  const lines = ['# task proxy users (test)', ''];
  for (const u of users) lines.push(`${u.username}:${await hashPassword(u.password, FAST_SCRYPT)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

export interface ProxyTestServer {
  readonly service: TaskProxyService;
  readonly config: TaskProxyConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * The task proxy on an ephemeral loopback port; `env` adds or overrides variables (TASK_AGENT_URL,
 * TASK_AGENT_DB or DATABASE_URL, TASK_PROXY_USERS_FILE…). Resolves once the users are loaded and
 * the agent was probed once.
 */
export async function startProxy(
  env: Record<string, string>,
  options: { now?: () => number } = {},
): Promise<ProxyTestServer> {
  const { config, password } = loadTaskProxyConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    TASK_PROXY_PROBE_MS: '100',
    TASK_AGENT_TIMEOUT_MS: '5000',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildTaskProxyApp({
    config,
    password,
    logger: createLogger({ service: 'task-proxy', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const server = await serve(service.kit, { signals: [], exit: false });
  // The users loaded, or their first load failed (the proxy says why while it tries again).
  await waitFor(() => {
    const reason = service.kit.readiness.reason;
    return reason === undefined || reason.startsWith('users not loaded');
  }, 20_000);
  await service.monitor.check();
  return { service, config, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

/** One cookie as a browser keeps it. */
export interface StoredCookie {
  readonly name: string;
  readonly value: string;
  /** Attribute names (lower case) and values: path, httponly, samesite, secure, max-age… */
  readonly attributes: Readonly<Record<string, string | true>>;
}

/**
 * A minimal cookie jar for one origin: keeps what Set-Cookie headers set (Max-Age=0 or a past
 * Expires deletes), sends them back as a Cookie header, and keeps every Set-Cookie seen for
 * assertions on its attributes.
 */
export class CookieJar {
  private readonly cookies = new Map<string, StoredCookie>();
  readonly seen: StoredCookie[] = [];

  store(res: Response): void {
    for (const header of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = header.split(';').map((p) => p.trim());
      const eq = pair.indexOf('=');
      const cookie: StoredCookie = {
        name: pair.slice(0, eq),
        value: pair.slice(eq + 1),
        attributes: Object.fromEntries(
          attrs.map((a) => {
            const i = a.indexOf('=');
            return i < 0 ? [a.toLowerCase(), true] : [a.slice(0, i).toLowerCase(), a.slice(i + 1)];
          }),
        ),
      };
      this.seen.push(cookie);
      const expires = cookie.attributes['expires'];
      const gone =
        cookie.attributes['max-age'] === '0' ||
        (typeof expires === 'string' && new Date(expires).getTime() <= Date.now());
      if (gone) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name)?.value;
  }

  set(name: string, value: string): void {
    this.cookies.set(name, { name, value, attributes: {} });
  }

  clear(): void {
    this.cookies.clear();
  }

  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    return [...this.cookies.values()].map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** The last Set-Cookie seen for `name`. */
  last(name: string): StoredCookie | undefined {
    return this.seen.filter((c) => c.name === name).at(-1);
  }
}

export type Encoding = 'urlencoded' | 'multipart' | 'json';

export interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/** A browser-less client of the proxy: a cookie jar, form posts in three encodings. */
export class ProxyClient {
  readonly jar = new CookieJar();

  constructor(
    readonly url: string,
    private readonly defaults: { encoding?: Encoding; headers?: Record<string, string> } = {},
  ) {}

  async request(
    method: string,
    path: string,
    fields?: Record<string, unknown>,
    options: { encoding?: Encoding; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const encoding = options.encoding ?? this.defaults.encoding ?? 'urlencoded';
    const headers: Record<string, string> = { ...this.defaults.headers, ...options.headers };
    const cookie = this.jar.header();
    if (cookie !== undefined) headers['cookie'] = cookie;
    let body: string | FormData | URLSearchParams | undefined;
    if (fields !== undefined) {
      if (encoding === 'json') {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(fields);
      } else if (encoding === 'multipart') {
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
        body = form;
      } else {
        body = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)]));
      }
    }
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers,
      redirect: 'manual',
      ...(body ? { body } : {}),
    });
    this.jar.store(res);
    const text = await res.text();
    let parsed: Record<string, unknown>;
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      parsed = { html: text };
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  login(
    user: { username: string; password: string } = ALICE,
    options: { encoding?: Encoding; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    return this.request('POST', '/login.php', { username: user.username, password: user.password }, options);
  }

  logout(options: { headers?: Record<string, string> } = {}): Promise<Answer> {
    return this.request('POST', '/logout.php', {}, options);
  }

  action(
    action: string,
    fields: Record<string, unknown> = {},
    options: { encoding?: Encoding; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    return this.request('POST', '/api/agent_proxy.php', { action, ...fields }, options);
  }

  /** The action's body, failing the test with the answer when it is not 200. */
  async ok(action: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const answer = await this.action(action, fields);
    if (answer.status !== 200)
      throw new Error(`${action} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
}

export { freePort, metricValue, sleep } from '../kit/helpers.js';

export interface FakeAgent {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A stand-in task agent on a free port: healthy at its probe (`/health` answers 200), every other
 * request goes to `handle`.
 */
export async function startFakeAgent(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FakeAgent> {
  const server = createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"healthy"}');
      return;
    }
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export { until };

export interface AgentProcess {
  readonly url: string;
  /** SIGKILL: no shutdown hook runs. */
  kill(): Promise<void>;
}

const AGENT_MAIN = new URL('../../services/task-agent/dist/main.js', import.meta.url).pathname;

/**
 * The built task agent as a real process on `port` (so the proxy finds it again after a restart),
 * with the agent tests' settings (test/task-agent/helpers.ts TEST_ENV). `npm test` builds
 * services/task-agent/dist first. Resolves once its /health answers 200 and it saw the LLM up.
 */
export async function startAgentProcess(env: Record<string, string>, port: number): Promise<AgentProcess> {
  const child = spawn(process.execPath, [AGENT_MAIN], {
    env: { ...process.env, ...TEST_ENV, LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${String(port)}`;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the task agent exited (${child.exitCode}): ${stderr}`);
      const health = await fetch(`${url}/health`).then(
        async (r) => (r.status === 200 ? ((await r.json()) as { llm: { state: string } }) : undefined),
        () => undefined,
      );
      return health?.llm.state === 'up' ? true : undefined;
    },
    30_000,
    'the task agent healthy',
  );
  return {
    url,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
