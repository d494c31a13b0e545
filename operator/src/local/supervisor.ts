/**
 * One service process: spawn it (its own process group, output appended to its log file), restart
 * it with exponential backoff when it exits unexpectedly, stop it (SIGTERM, then SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, openSync } from 'node:fs';

export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  /** A process that stayed up this long starts again from `initialMs`. */
  readonly resetAfterMs: number;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export type SupervisorEvent =
  | { readonly type: 'spawned'; readonly pid: number }
  | { readonly type: 'exited'; readonly exit: Exit; readonly restartInMs: number | null }
  | { readonly type: 'spawn-failed'; readonly error: string; readonly restartInMs: number | null };

export interface SupervisorOptions {
  readonly entry: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly logFile: string;
  readonly backoff: Backoff;
  readonly onEvent: (event: SupervisorEvent) => void;
  readonly now?: () => number;
}

/** Delay before restart number `attempt + 1`: initial · 2^attempt, capped. */
export function backoffDelay(attempt: number, backoff: Backoff): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 30));
}

export class Supervisor {
  private child: ChildProcess | null = null;
  private exited: Promise<Exit> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private attempt = 0;
  private spawnedAt = 0;
  private restartCount = 0;
  private readonly now: () => number;

  constructor(private readonly options: SupervisorOptions) {
    this.now = options.now ?? Date.now;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get restarts(): number {
    return this.restartCount;
  }

  start(): void {
    this.stopping = false;
    this.spawnOnce();
  }

  private spawnOnce(): void {
    const { entry, cwd, env, logFile } = this.options;
    let fd: number | undefined;
    try {
      fd = openSync(logFile, 'a');
      appendFileSync(fd, `--- ${new Date().toISOString()} clinicalsuite: starting ${entry}\n`);
      const child = spawn(process.execPath, [entry], {
        cwd,
        env: { ...env },
        stdio: ['ignore', fd, fd],
        detached: true,
      });
      this.child = child;
      this.spawnedAt = this.now();
      this.exited = new Promise<Exit>((resolve) => {
        child.once('exit', (code, signal) => resolve({ code, signal }));
        child.once('error', () => resolve({ code: null, signal: null }));
      });
      void this.exited.then((exit) => this.onExit(child, exit));
      if (child.pid !== undefined) this.options.onEvent({ type: 'spawned', pid: child.pid });
    } catch (error) {
      this.child = null;
      const restartInMs = this.scheduleRestart();
      this.options.onEvent({ type: 'spawn-failed', error: (error as Error).message, restartInMs });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  private onExit(child: ChildProcess, exit: Exit): void {
    if (this.child !== child) return;
    this.signalGroup(child, 'SIGKILL'); // anything it left behind in its group
    this.child = null;
    if (this.stopping) {
      this.options.onEvent({ type: 'exited', exit, restartInMs: null });
      return;
    }
    if (this.now() - this.spawnedAt >= this.options.backoff.resetAfterMs) this.attempt = 0;
    const restartInMs = this.scheduleRestart();
    this.options.onEvent({ type: 'exited', exit, restartInMs });
  }

  private scheduleRestart(): number | null {
    if (this.stopping) return null;
    const delay = backoffDelay(this.attempt, this.options.backoff);
    this.attempt += 1;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.stopping) return;
      this.restartCount += 1;
      this.spawnOnce();
    }, delay);
    return delay;
  }

  private signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  }

  /** SIGTERM, up to `timeoutMs` to exit, then SIGKILL. Resolves with the exit (null: was not running). */
  async stop(timeoutMs: number): Promise<{ exit: Exit; killed: boolean } | null> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const child = this.child;
    const exited = this.exited;
    if (!child || !exited) return null;
    this.signalGroup(child, 'SIGTERM');
    let timeout: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      exited,
      new Promise<null>((resolve) => (timeout = setTimeout(() => resolve(null), timeoutMs))),
    ]);
    clearTimeout(timeout);
    if (first) return { exit: first, killed: false };
    this.signalGroup(child, 'SIGKILL');
    return { exit: await exited, killed: true };
  }

  /** SIGKILL now and wait (bounded) for the exit, so that no zombie is left to the runner's parent. */
  async killAndWait(timeoutMs: number): Promise<void> {
    const exited = this.exited;
    const running = this.child !== null;
    this.kill();
    if (!running || !exited) return;
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }

  /** SIGKILL now, no restart (a second Ctrl-C, or the runner exiting). Synchronous. */
  kill(): void {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.child) this.signalGroup(this.child, 'SIGKILL');
  }
}
