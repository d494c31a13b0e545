import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { limitedCommand, type ChildLimits } from '@clinicalsuite/kit';

/**
 * Runs one argv, the only way `/shell` runs anything:
 *
 * - `file` is an absolute path resolved by the caller; `shell: false` (Node's default, stated):
 *   nothing parses the arguments again;
 * - under `limits` (memory and CPU time) that the kernel enforces from its first instruction: it is
 *   started by util-linux's `prlimit`, which sets them and execs `file` (so the program sees its
 *   absolute path as argv[0]);
 * - in its own session and process group (`detached`), so the deadline, the output cap, an abort
 *   and the end of the leader kill every process it started (SIGKILL to the group);
 * - as `uid`/`gid` when given (libuv also drops supplementary groups), in `cwd`, with exactly `env`
 *   (nothing inherited), stdin on /dev/null;
 * - stdout and stderr each kept up to `maxOutputBytes`; past it the stream is flagged truncated and
 *   the command is stopped (a command cannot make the agent buffer or wait without bound).
 */

export interface RunSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly limits: ChildLimits;
  readonly signal: AbortSignal;
}

export interface RunOutcome {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  readonly durationMs: number;
}

/** The process could not be started (the error's code: ENOENT, EACCES, EPERM ...). */
export class SpawnError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SpawnError';
  }
}

class Capture {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly max: number) {}

  /** Keeps what fits; false once the cap was passed. */
  add(chunk: Buffer): boolean {
    if (this.truncated) return false;
    const room = this.max - this.size;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.size = this.max;
      this.truncated = true;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Processes started and not yet reaped, so that shutdown can kill them. */
export class CommandRunner {
  private readonly live = new Set<() => void>();

  get running(): number {
    return this.live.size;
  }

  killAll(): void {
    for (const kill of this.live) kill();
  }

  run(spec: RunSpec): Promise<RunOutcome> {
    spec.signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const command = limitedCommand(spec.file, spec.args, spec.limits);
      const child = spawn(command.command, command.args, {
        shell: false,
        cwd: spec.cwd,
        env: { ...spec.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
        windowsHide: true,
        ...(spec.uid === undefined ? {} : { uid: spec.uid }),
        ...(spec.gid === undefined ? {} : { gid: spec.gid }),
      });
      const stdout = new Capture(spec.maxOutputBytes);
      const stderr = new Capture(spec.maxOutputBytes);
      let timedOut = false;
      let settled = false;
      const killGroup = (): void => {
        if (child.pid === undefined) return;
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // The group is gone already.
        }
      };
      this.live.add(killGroup);
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, spec.timeoutMs);
      const onAbort = (): void => killGroup();
      spec.signal.addEventListener('abort', onAbort, { once: true });
      const finish = (): void => {
        clearTimeout(timer);
        spec.signal.removeEventListener('abort', onAbort);
        this.live.delete(killGroup);
      };
      child.stdout.on('data', (chunk: Buffer) => {
        if (!stdout.add(chunk)) killGroup();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        if (!stderr.add(chunk)) killGroup();
      });
      child.once('error', (error: NodeJS.ErrnoException) => {
        if (settled) return;
        settled = true;
        finish();
        reject(new SpawnError(error.code ?? 'UNKNOWN', error.message, { cause: error }));
      });
      // The leader is gone: whatever it left in its group goes too (and would hold the pipes open).
      child.once('exit', killGroup);
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        if (settled) return;
        settled = true;
        finish();
        if (spec.signal.aborted) {
          const reason: unknown = spec.signal.reason;
          reject(reason instanceof Error ? reason : new Error('The command was aborted', { cause: reason }));
          return;
        }
        resolve({
          exitCode: code,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          timedOut,
          durationMs: Math.round(performance.now() - started),
        });
      });
    });
  }
}
