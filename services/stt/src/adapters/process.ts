import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/**
 * Runs an engine's command on a buffer: the buffer goes to stdin, stdout comes back (bounded),
 * stderr is kept (its tail, for the logs, never for clients). The child is killed (SIGKILL) when
 * `signal` aborts (client gone, deadline) or after `timeoutMs`.
 */

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderrTail: string;
  readonly timedOut: boolean;
  readonly aborted: boolean;
}

export interface RunOptions {
  readonly input?: Buffer;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Largest stdout kept; more kills the child (a runaway decoder). */
  readonly maxStdoutBytes: number;
  /** How to stop the child (default SIGKILL to it; a process group needs its own). */
  readonly kill?: () => void;
}

export class CommandNotFoundError extends Error {
  constructor(readonly command: string) {
    super(`${command} not found`);
    this.name = 'CommandNotFoundError';
  }
}

export class OutputTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`output exceeded ${String(limit)} bytes`);
    this.name = 'OutputTooLargeError';
  }
}

export function runCommand(
  command: string,
  args: readonly string[],
  options: RunOptions,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(options.signal.reason as Error);
      return;
    }
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    collect(child, options).then(resolve, reject);
    child.stdin.on('error', () => undefined); // the child may stop reading early (EPIPE)
    child.stdin.end(options.input);
  });
}

/** Collects a started child's output until it exits, under the options' timeout and signal. */
export function collect(child: ChildProcessWithoutNullStreams, options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let timedOut = false;
    let aborted = false;
    let overflow = false;
    const kill = (): void => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (options.kill === undefined) child.kill('SIGKILL');
      else options.kill();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > options.maxStdoutBytes) {
        overflow = true;
        kill();
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const done = (): void => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      done();
      reject(error.code === 'ENOENT' ? new CommandNotFoundError(child.spawnfile) : error);
    });
    child.once('close', (code, signal) => {
      done();
      if (overflow) {
        reject(new OutputTooLargeError(options.maxStdoutBytes));
        return;
      }
      resolve({ code, signal, stdout: Buffer.concat(chunks), stderrTail: stderr, timedOut, aborted });
    });
  });
}

/** The last non-empty line of a stderr tail (for logs). */
export function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .pop()
      ?.slice(0, 300) ?? ''
  );
}
