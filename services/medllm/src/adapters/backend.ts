import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  withoutTrailingSlashes,
  type KitMetrics,
  type Logger,
  type OpenContext,
  type Resource,
} from '@clinicalsuite/kit';
import type { MedllmConfig } from '../config.js';
import { BackendClient } from './backend-client.js';
import { BackendPidFile, parentDeathLauncher, type Launcher } from './backend-process.js';

/**
 * llama-server as a managed child process, opened as the service's kit resource: started on a
 * loopback port with the model and its projector, open once its `/health` answers 200, polled
 * while it runs. When it exits or stops answering, the resource is lost and the kit starts it
 * again after a pause that doubles while it keeps dying (the resource's retry), with the reason
 * in words. Its output goes to the service's log at debug only (at that level llama-server may
 * print prompt pieces; at info nothing of a request is logged). With `externalUrl` no process is
 * managed: the same health polling watches a server run elsewhere.
 *
 * It never outlives the front (backend-process.ts): started under `setpriv --pdeathsig KILL` where
 * util-linux has it, so the kernel kills it when the front dies (SIGKILL, OOM kill, crash); and
 * with a pid file, a front starting after one that died kills the backend left behind before it
 * starts its own (which would otherwise hold the GPU memory and run unattended).
 */

export type BackendState = 'waiting' | 'starting' | 'ready' | 'restarting' | 'stopped';

export interface LlamaServerOptions {
  readonly binary: string;
  /** llama-server's arguments, without --host/--port (added here). */
  readonly args: readonly string[];
  /** Files that must exist before a start is tried (model, projector). */
  readonly requiredFiles: readonly string[];
  readonly externalUrl?: string;
  readonly logger: Logger;
  readonly startTimeoutMs: number;
  /** How often missing files are looked for again, at most. */
  readonly maxBackoffMs: number;
  readonly healthIntervalMs: number;
  /** The service's metrics, where the calls to llama-server are counted. */
  readonly metrics?: KitMetrics;
  /**
   * util-linux's setpriv (a name on PATH or a path): llama-server is started under
   * `setpriv --pdeathsig KILL` so it dies with the front. Unset, or not working: a plain child,
   * which survives a SIGKILLed front until the next start reaps it through the pid file.
   */
  readonly setpriv?: string;
  /** Where the running backend's pid is recorded (a stale one is killed at start); none if unset. */
  readonly pidFile?: string;
}

/** An open backend: its client, and what stops it (and the watching of it). */
export interface RunningBackend {
  readonly client: BackendClient;
  stop(): Promise<void>;
}

const STDERR_TAIL = 8;

/** Starts llama-server (or finds the external backend) for each open of the resource. */
export class LlamaServer {
  private launcher: Launcher | null | undefined;
  private readonly pidFile: BackendPidFile | undefined;
  private reaped = false;
  private startedOnce = false;
  private child: ChildProcess | undefined;
  private client: BackendClient | undefined;
  /** Times the backend was started again after it stopped. */
  restarts = 0;

  constructor(private readonly options: LlamaServerOptions) {
    if (options.pidFile !== undefined) this.pidFile = new BackendPidFile(options.pidFile, options.logger);
  }

  /** The process running now (also while it loads). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The backend's URL (also while it loads). */
  get url(): string | undefined {
    return this.client?.baseUrl;
  }

  /** One open: resolves once the backend answers /health; watches it from then on (`ctx.lost`). */
  open(ctx: OpenContext): Promise<RunningBackend> {
    return this.options.externalUrl === undefined ? this.launch(ctx) : this.watchExternal(ctx);
  }

  private async launch(ctx: OpenContext): Promise<RunningBackend> {
    const o = this.options;
    for (;;) {
      const missing = [o.binary, ...o.requiredFiles].filter(
        (path) => path.includes('/') && !existsSync(path),
      );
      if (missing.length === 0) break;
      ctx.readiness.setNotReady(
        `backend files not found: ${missing.join(', ')} (mount the MedGemma GGUF and its mmproj, ` +
          'build llama-server with services/medllm/scripts/)',
      );
      await sleep(Math.min(o.maxBackoffMs, 2000), undefined, { signal: ctx.signal });
    }
    ctx.opening('llama-server is loading the model and projector');
    if (!this.reaped) {
      this.reaped = true;
      await this.pidFile?.reapStale(o.binary);
    }
    const port = await freePort();
    ctx.signal.throwIfAborted();
    const args = [...o.args, '--host', '127.0.0.1', '--port', String(port)];
    const log = o.logger.child({ component: 'llama-server' });
    log.info(
      { binary: o.binary, port },
      this.startedOnce ? 'restarting llama-server' : 'starting llama-server',
    );
    if (this.startedOnce) this.restarts += 1;
    this.startedOnce = true;
    const launcher = this.parentDeathLauncher();
    let child: ChildProcess;
    try {
      child =
        launcher === null
          ? spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
          : spawn(launcher.command, [...launcher.args, o.binary, ...args], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
    } catch (error) {
      throw this.died(`llama-server could not be started: ${(error as Error).message}`);
    }
    return new LlamaProcess(this, child, this.clientOf(`http://127.0.0.1:${port}`), ctx, log).opened();
  }

  /** The backend run elsewhere: open once it answers; not ready (with its words) while it does not. */
  private async watchExternal(ctx: OpenContext): Promise<RunningBackend> {
    const o = this.options;
    const client = this.clientOf(withoutTrailingSlashes(o.externalUrl ?? ''));
    this.client = client;
    ctx.opening(`waiting for the backend at ${client.baseUrl}`);
    const pollMs = Math.min(o.healthIntervalMs, 500);
    for (;;) {
      const health = await client.health();
      if (health.state === 'ok') break;
      ctx.readiness.setNotReady(`backend at ${client.baseUrl}: ${health.detail}`);
      await sleep(pollMs, undefined, { signal: ctx.signal });
    }
    o.logger.info({ component: 'llama-server' }, 'backend ready');
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const watch = (): void => {
      void client.health().then((health) => {
        if (stopped) return;
        if (health.state === 'ok') {
          if (!ctx.readiness.ready) o.logger.info({ component: 'llama-server' }, 'backend ready');
          ctx.readiness.setReady();
        } else ctx.readiness.setNotReady(`backend at ${client.baseUrl}: ${health.detail}`);
        timer = setTimeout(watch, health.state === 'ok' ? o.healthIntervalMs : pollMs);
        timer.unref();
      });
    };
    timer = setTimeout(watch, o.healthIntervalMs);
    timer.unref();
    return {
      client,
      stop: () => {
        stopped = true;
        clearTimeout(timer);
        return Promise.resolve();
      },
    };
  }

  private clientOf(baseUrl: string): BackendClient {
    return new BackendClient(baseUrl, { metrics: this.options.metrics });
  }

  /** Records the process started (its pid in the pid file) and forgets it once it exited. */
  track(child: ChildProcess, client: BackendClient): void {
    this.child = child;
    this.client = client;
    const pid = child.pid;
    if (pid !== undefined) this.pidFile?.record(pid, this.options.binary);
    child.once('exit', () => {
      if (pid !== undefined) this.pidFile?.clear(pid);
      if (this.child === child) this.child = undefined;
    });
  }

  /** Says why the backend stopped (llama-server's own words where it had any): logged, and thrown or lost. */
  died(reason: string): Error {
    this.options.logger.warn({ component: 'llama-server' }, reason);
    return new Error(reason);
  }

  get startTimeoutMs(): number {
    return this.options.startTimeoutMs;
  }

  get healthIntervalMs(): number {
    return this.options.healthIntervalMs;
  }

  /** The setpriv launcher, looked for once; null when off or not available (said once in the log). */
  private parentDeathLauncher(): Launcher | null {
    if (this.launcher !== undefined) return this.launcher;
    const { setpriv } = this.options;
    this.launcher = setpriv === undefined ? null : parentDeathLauncher(setpriv);
    if (setpriv !== undefined && this.launcher === null) {
      this.options.logger.warn(
        { component: 'llama-server' },
        `${setpriv} --pdeathsig (util-linux) does not run here: llama-server is started as a plain ` +
          "child, so a killed front leaves it running until the service's next start",
      );
    }
    return this.launcher;
  }
}

/**
 * One llama-server process: open once /health answers 200 (killed when it takes longer than
 * `startTimeoutMs`), then polled; an exit, or two failed polls in a row (hung: killed), loses it.
 */
class LlamaProcess implements RunningBackend {
  private readonly tail: string[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private ready = false;
  private stopping = false;
  private failedChecks = 0;
  private readonly exited: Promise<void>;
  private settle: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(
    private readonly server: LlamaServer,
    private readonly child: ChildProcess,
    readonly client: BackendClient,
    private readonly ctx: OpenContext,
    private readonly log: Logger,
  ) {
    server.track(child, client);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        log.debug(line);
        this.tail.push(line);
        if (this.tail.length > STDERR_TAIL) this.tail.shift();
      });
    }
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('error', (error) => this.ended(`llama-server could not be started: ${error.message}`));
    child.once('exit', (code, signal) => {
      const how = signal === null ? `code ${String(code)}` : `signal ${signal}`;
      // Load-time output names the cause (bad GGUF, wrong projector); it holds no request data.
      const last = this.ready
        ? ''
        : this.tail
            .filter((l) => l.trim() !== '')
            .slice(-2)
            .join(' | ');
      this.ended(`llama-server exited (${how})${last === '' ? '' : `: ${last}`}`);
    });
  }

  /** Resolves once /health answers 200; rejects when the process ends first or the service closes. */
  opened(): Promise<RunningBackend> {
    const { signal } = this.ctx;
    const onAbort = (): void => void this.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    const deadline = Date.now() + this.server.startTimeoutMs;
    const waitReady = async (): Promise<void> => {
      const health = await this.client.health();
      if (this.stopping || this.settle === undefined) return;
      if (health.state === 'ok') {
        this.ready = true;
        this.settle.resolve();
        return;
      }
      if (Date.now() > deadline) {
        this.log.warn(
          { timeoutMs: this.server.startTimeoutMs },
          'llama-server did not become ready in time; killing it',
        );
        this.child.kill('SIGKILL');
        return;
      }
      this.schedule(100, () => void waitReady());
    };
    return new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.schedule(50, () => void waitReady());
    })
      .then(() => {
        this.settle = undefined;
        this.log.info('backend ready');
        this.schedule(this.server.healthIntervalMs, () => this.watch());
        return this;
      })
      .finally(() => signal.removeEventListener('abort', onAbort));
  }

  /** Polls /health while it runs. */
  private watch(): void {
    void this.client.health().then((health) => {
      if (this.stopping) return;
      if (health.state === 'ok') {
        this.failedChecks = 0;
        this.schedule(this.server.healthIntervalMs, () => this.watch());
        return;
      }
      this.failedChecks += 1;
      if (this.failedChecks < 2) {
        this.schedule(200, () => this.watch());
        return;
      }
      // Alive but not answering twice in a row: hung. Kill it; its exit loses it.
      this.log.warn({ detail: health.detail }, 'llama-server stopped answering /health; killing it');
      this.child.kill('SIGKILL');
    });
  }

  /** The process ended (or never started): fails the open, or loses the open backend. */
  private ended(reason: string): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.stopping) return;
    this.stopping = true;
    const error = this.server.died(reason);
    if (this.settle !== undefined) this.settle.reject(error);
    else this.ctx.lost(error);
  }

  private schedule(ms: number, fn: () => void): void {
    if (this.stopping) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopping) fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /** Stops watching, and the process: SIGTERM, SIGKILL after 5 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const force = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      this.child.kill('SIGTERM');
      await this.exited;
      clearTimeout(force);
    }
    // An open still waiting ends once the process is gone.
    this.settle?.reject(new Error('llama-server was stopped'));
  }
}

/** What the routes read of the backend: its state in /health's words, its client while ready. */
export class ManagedBackend {
  constructor(
    private readonly resource: Resource<RunningBackend>,
    private readonly server: LlamaServer,
  ) {}

  get state(): BackendState {
    return backendState(this.resource);
  }

  /** The client of the backend now running, or undefined while none is ready. */
  get ready(): BackendClient | undefined {
    return this.state === 'ready' ? this.resource.value?.client : undefined;
  }

  /** The running backend's URL (also while it loads). */
  get url(): string | undefined {
    return this.server.url;
  }

  get pid(): number | undefined {
    return this.server.pid;
  }

  /** Times the backend was started again after it stopped. */
  get restarts(): number {
    return this.server.restarts;
  }
}

/** llama-server's options for the config. */
export function llamaServerOptions(
  config: MedllmConfig,
  logger: Logger,
  metrics: KitMetrics,
): LlamaServerOptions {
  return {
    metrics,
    binary: config.LLAMA_SERVER_PATH,
    args: llamaServerArgs(config),
    requiredFiles: [config.modelPath, config.mmprojPath],
    ...(config.BACKEND_URL === undefined ? {} : { externalUrl: config.BACKEND_URL }),
    logger,
    startTimeoutMs: config.BACKEND_START_TIMEOUT_MS,
    maxBackoffMs: config.BACKEND_MAX_BACKOFF_MS,
    healthIntervalMs: config.BACKEND_HEALTH_INTERVAL_MS,
    ...(config.setpriv === undefined ? {} : { setpriv: config.setpriv }),
    ...(config.backendPidFile === undefined ? {} : { pidFile: config.backendPidFile }),
  };
}

/** llama-server's arguments for the config (host and port are added when it starts). */
export function llamaServerArgs(config: MedllmConfig): string[] {
  return [
    '--model',
    config.modelPath,
    '--mmproj',
    config.mmprojPath,
    '--alias',
    config.SERVED_MODEL_NAME,
    // llama-server splits --ctx-size over its --parallel slots; the front checks every request
    // against CONTEXT_SIZE, so each slot must hold that much.
    '--ctx-size',
    String(config.CONTEXT_SIZE * config.MAX_CONCURRENCY),
    '--parallel',
    String(config.MAX_CONCURRENCY),
    '--threads',
    String(config.threads),
    '--n-gpu-layers',
    String(config.GPU_LAYERS),
    '--no-webui',
    ...config.LLAMA_SERVER_ARGS.split(/\s+/).filter((a) => a !== ''),
  ];
}

/** The resource's state in the words /health uses for llama-server. */
export function backendState(resource: Resource<RunningBackend>): BackendState {
  switch (resource.state) {
    case 'waiting':
      return 'waiting';
    case 'opening':
      return 'starting';
    case 'ready':
      // Open, but an external backend not answering: not ready with its words.
      return resource.reason === undefined ? 'ready' : 'starting';
    case 'failed':
      return 'restarting';
    case 'stopped':
      return 'stopped';
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
