import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import {
  buildApp,
  createLogger,
  kitConfigSchema,
  loadConfig,
  Readiness,
  serve,
  type AppOptions,
  type KitApp,
  type RunningServer,
} from '@clinicalsuite/kit';

export interface TestServer {
  readonly kit: KitApp;
  readonly server: RunningServer;
  readonly url: string;
  /** Every log line the app wrote, parsed. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** Builds a kit app from `env` (kit variables) and serves it on an ephemeral loopback port. */
export async function startTestServer(
  options: Omit<AppOptions, 'config' | 'service' | 'title' | 'version'> &
    Partial<Pick<AppOptions, 'service' | 'title' | 'version'>>,
  env: Record<string, string> = {},
): Promise<TestServer> {
  const config = loadConfig(kitConfigSchema({ port: 0, maxConcurrency: 2 }), {
    HOST: '127.0.0.1',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    SHUTDOWN_GRACE_MS: '2000',
    LOG_LEVEL: 'debug',
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = options.service ?? 'test';
  const kit = buildApp({
    service,
    title: options.title ?? 'Test service',
    version: options.version ?? '1.2.3',
    logger: createLogger({ service, level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    ...options,
    config,
  });
  const server = await serve(kit, { signals: [], exit: false });
  return { kit, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

/** A promise with its resolve function, to hold a handler until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** A readiness that is already ready. */
export function ready(): Readiness {
  const r = new Readiness();
  r.setReady();
  return r;
}

/** A pino destination that keeps every log line, parsed, for assertions on what was logged. */
export function captureLogs(): { logs: Record<string, unknown>[]; destination: Writable } {
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logs, destination };
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function until<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** A loopback port free right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * The sum of a metric's samples on `<url>/metrics` whose labels include `labels` (the kit adds
 * `service` to every sample); 0 when there is none.
 */
export async function metricValue(
  url: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}
