import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { withoutTrailingSlashes, type KitMetrics, type Logger, type Readiness } from '@clinicalsuite/kit';
import type { Registry } from 'prom-client';
import { BackendClient } from './backend-client.js';
import { BackendPidFile, parentDeathLauncher, type Launcher } from './backend-process.js';

/**
 * llama-server as a managed child process: started on a loopback port with the model and its
 * projector, ready once its `/health` answers 200, polled while it runs, and started again with
 * exponential backoff when it exits or stops answering. Its readiness is the service's
 * (`Readiness`), with the reason in words. Its output goes to the service's log at debug only
 * (at that level llama-server may print prompt pieces; at info nothing of a request is logged).
 * With `externalUrl` no process is managed: the same health polling watches a server run elsewhere.
 *
 * It never outlives the front (backend-process.ts): started under `setpriv --pdeathsig KILL` where
 * util-linux has it, so the kernel kills it when the front dies (SIGKILL, OOM kill, crash); and
 * with a pid file, a front starting after one that died kills the backend left behind before it
 * starts its own (which would otherwise hold the GPU memory and run unattended).
 */

export type BackendState = 'waiting' | 'starting' | 'ready' | 'restarting' | 'stopped';

export interface ManagedBackendOptions {
  readonly binary: string;
  /** llama-server's arguments, without --host/--port (added here). */
  readonly args: readonly string[];
  /** Files that must exist before a start is tried (model, projector). */
  readonly requiredFiles: readonly string[];
  readonly externalUrl?: string;
  readonly readiness: Readiness;
  readonly logger: Logger;
  readonly startTimeoutMs: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly healthIntervalMs: number;
  /** Called each time the backend is started again after it stopped. */
  readonly onRestart?: () => void;
  /** The service's metrics, where the calls to llama-server are counted. */
  readonly metrics?: KitMetrics | Registry | undefined;
  /**
   * util-linux's setpriv (a name on PATH or a path): llama-server is started under
   * `setpriv --pdeathsig KILL` so it dies with the front. Unset, or not working: a plain child,
   * which survives a SIGKILLed front until the next start reaps it through the pid file.
   */
  readonly setpriv?: string;
  /** Where the running backend's pid is recorded (a stale one is killed at start); none if unset. */
  readonly pidFile?: string;
}

const STDERR_TAIL = 8;

export class ManagedBackend {
  private child: ChildProcess | undefined;
  private client: BackendClient | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /**
   * Bumped on every launch and death: a timer or health check begun for an earlier process does
   * nothing when it fires (a late poll must not cancel the restart that a death scheduled).
   */
  private epoch = 0;
  private closed = false;
  private backoff: number;
  private startedOnce = false;
  private tail: string[] = [];
  private failedChecks = 0;
  private launcher: Launcher | null | undefined;
  private readonly pidFile: BackendPidFile | undefined;
  private reaped = false;
  private currentState: BackendState = 'waiting';
  private readyAt = 0;
  /** Times the backend was started again after it stopped. */
  restarts = 0;

  constructor(private readonly options: ManagedBackendOptions) {
    this.backoff = options.backoffMs;
    if (options.pidFile !== undefined) this.pidFile = new BackendPidFile(options.pidFile, options.logger);
  }

  get state(): BackendState {
    return this.currentState;
  }

  /** The client of the backend now running, or undefined while none is ready. */
  get ready(): BackendClient | undefined {
    return this.currentState === 'ready' ? this.client : undefined;
  }

  /** The running backend's URL (also while it loads). */
  get url(): string | undefined {
    return this.client?.baseUrl;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    if (this.closed) return;
    if (this.options.externalUrl !== undefined) {
      this.client = new BackendClient(withoutTrailingSlashes(this.options.externalUrl), {
        metrics: this.options.metrics,
      });
      this.setState('starting', `waiting for the backend at ${this.client.baseUrl}`);
      this.schedule(0, () => this.watch());
      return;
    }
    void this.launch();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.setState('stopped', 'shutting down');
    await this.stopChild();
  }

  private async launch(): Promise<void> {
    if (this.closed) return;
    this.epoch += 1;
    const missing = [this.options.binary, ...this.options.requiredFiles].filter(
      (path) => path.includes('/') && !existsSync(path),
    );
    if (missing.length > 0) {
      this.setState(
        'waiting',
        `backend files not found: ${missing.join(', ')} (mount the MedGemma GGUF and its mmproj, ` +
          'build llama-server with services/medllm/scripts/)',
      );
      this.schedule(Math.min(this.options.maxBackoffMs, 2000), () => void this.launch());
      return;
    }
    const epoch = this.epoch;
    if (!this.reaped) {
      this.reaped = true;
      await this.pidFile?.reapStale(this.options.binary);
    }
    const port = await freePort();
    if (this.isClosed() || epoch !== this.epoch) return;
    const args = [...this.options.args, '--host', '127.0.0.1', '--port', String(port)];
    this.tail = [];
    this.failedChecks = 0;
    const log = this.options.logger.child({ component: 'llama-server' });
    log.info(
      { binary: this.options.binary, port },
      this.startedOnce ? 'restarting llama-server' : 'starting llama-server',
    );
    if (this.startedOnce) {
      this.restarts += 1;
      this.options.onRestart?.();
    }
    this.startedOnce = true;
    const launcher = this.parentDeathLauncher();
    let child: ChildProcess;
    try {
      child =
        launcher === null
          ? spawn(this.options.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
          : spawn(launcher.command, [...launcher.args, this.options.binary, ...args], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
    } catch (error) {
      this.died(`llama-server could not be started: ${(error as Error).message}`);
      return;
    }
    this.child = child;
    const pid = child.pid;
    if (pid !== undefined) this.pidFile?.record(pid, this.options.binary);
    this.client = new BackendClient(`http://127.0.0.1:${port}`, { metrics: this.options.metrics });
    this.setState('starting', 'llama-server is loading the model and projector');
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        log.debug(line);
        this.tail.push(line);
        if (this.tail.length > STDERR_TAIL) this.tail.shift();
      });
    }
    child.once('error', (error) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.died(`llama-server could not be started: ${error.message}`);
    });
    child.once('exit', (code, signal) => {
      if (pid !== undefined) this.pidFile?.clear(pid);
      if (this.child !== child) return;
      this.child = undefined;
      const how = signal === null ? `code ${code}` : `signal ${signal}`;
      const loading = this.currentState === 'starting';
      // Load-time output names the cause (bad GGUF, wrong projector); it holds no request data.
      const last = loading
        ? this.tail
            .filter((l) => l.trim() !== '')
            .slice(-2)
            .join(' | ')
        : '';
      this.died(`llama-server exited (${how})${last === '' ? '' : `: ${last}`}`);
    });
    const deadline = Date.now() + this.options.startTimeoutMs;
    const waitReady = async (): Promise<void> => {
      const client = this.client;
      if (this.closed || this.child !== child || client === undefined) return;
      const health = await client.health();
      if (this.isClosed() || this.child !== child || epoch !== this.epoch) return;
      if (health.state === 'ok') {
        this.readyAt = Date.now();
        this.setState('ready');
        this.schedule(this.options.healthIntervalMs, () => this.watch());
        return;
      }
      if (Date.now() > deadline) {
        log.warn(
          { timeoutMs: this.options.startTimeoutMs },
          'llama-server did not become ready in time; killing it',
        );
        child.kill('SIGKILL');
        return;
      }
      this.schedule(100, () => void waitReady());
    };
    this.schedule(50, () => void waitReady());
  }

  /** Polls /health of the running (or external) backend. */
  private watch(): void {
    if (this.closed || this.client === undefined) return;
    const client = this.client;
    const epoch = this.epoch;
    void client.health().then((health) => {
      if (this.closed || client !== this.client || epoch !== this.epoch) return;
      if (health.state === 'ok') {
        this.failedChecks = 0;
        if (this.currentState !== 'ready') {
          this.readyAt = Date.now();
          this.setState('ready');
        }
        this.schedule(this.options.healthIntervalMs, () => this.watch());
        return;
      }
      this.failedChecks += 1;
      const external = this.options.externalUrl !== undefined;
      if (external || this.failedChecks < 2) {
        if (external) this.setState('starting', `backend at ${client.baseUrl}: ${health.detail}`);
        this.schedule(external ? Math.min(this.options.healthIntervalMs, 500) : 200, () => this.watch());
        return;
      }
      // Alive but not answering twice in a row: hung. Kill it; the exit handler restarts it.
      this.options.logger.warn(
        { component: 'llama-server', detail: health.detail },
        'llama-server stopped answering /health; killing it',
      );
      this.child?.kill('SIGKILL');
    });
  }

  private died(reason: string): void {
    if (this.closed) return;
    // A backend that served for a minute earns a fresh backoff; one that keeps dying waits longer.
    if (this.readyAt !== 0 && Date.now() - this.readyAt > 60_000) this.backoff = this.options.backoffMs;
    this.epoch += 1;
    const delay = this.backoff;
    this.backoff = Math.min(this.options.maxBackoffMs, this.backoff * 2);
    this.readyAt = 0;
    this.options.logger.warn({ component: 'llama-server', restartInMs: delay }, reason);
    this.setState('restarting', `${reason}; restarting in ${delay} ms`);
    this.schedule(delay, () => void this.launch());
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

  /** Read again after an await (the flag may have changed meanwhile). */
  private isClosed(): boolean {
    return this.closed;
  }

  private setState(state: BackendState, reason?: string): void {
    this.currentState = state;
    if (state === 'ready') {
      if (!this.options.readiness.ready)
        this.options.logger.info({ component: 'llama-server' }, 'backend ready');
      this.options.readiness.setReady();
    } else {
      this.options.readiness.setNotReady(reason ?? state);
    }
  }

  private schedule(ms: number, fn: () => void): void {
    if (this.closed) return;
    const epoch = this.epoch;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.closed && epoch === this.epoch) fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private async stopChild(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null) return;
    this.child = undefined;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      child.kill('SIGTERM');
    });
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
