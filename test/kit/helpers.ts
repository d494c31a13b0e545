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
