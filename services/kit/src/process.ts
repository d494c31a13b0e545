import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import {
  DEFAULT_CHILD_LIMITS,
  MemoryWatch,
  PRLIMIT,
  childLimitFailure,
  limitedCommand,
  type ChildLimits,
} from './child-limits.js';

/**
 * Runs an engine's command line (tesseract, espeak-ng, ffmpeg, pocketsphinx …) the one way every
 * service does it:
 *
 * - the input goes to stdin (Buffer or UTF-8 string): clinical data never goes in argv, which every
 *   user of the machine can read;
 * - stdout is collected up to `maxOutputBytes`; past it the process is killed;
 * - stderr is kept (its tail) for the service's own logs, never for clients;
 * - SIGKILL on the deadline, on abort and on output overflow, to the process or (`processGroup`)
 *   to its whole process group, so a shell pipeline leaves nothing behind;
 * - every child is registered with its runner until it exits, so `killAll()` at shutdown stops them;
 * - every child runs under a memory and a CPU-time limit (`ChildLimits`) that the kernel enforces:
 *   it is started by util-linux's `prlimit`, which sets them on itself and then becomes the command
 *   (exec, no shell), so whatever the input makes the engine do, one process cannot take more.
 *
 * Failures are a `ProcessError` with a `kind`; each service maps the kinds onto its own HTTP errors
 * (the kit's catalogue) with its own wording.
 */

export type ProcessFailureKind =
  | 'not_found'
  | 'exit'
  | 'timeout'
  | 'aborted'
  | 'output_too_large'
  /** It ran out of memory under `ChildLimits.memoryBytes` (what it wrote on stderr says so). */
  | 'memory_limit'
  /** The kernel killed it at `ChildLimits.cpuSeconds` of CPU time. */
  | 'cpu_limit';

export class ProcessError extends Error {
  constructor(
    readonly kind: ProcessFailureKind,
    /** The command as given (a name on PATH or a path). */
    readonly command: string,
    message: string,
    /** The end of what it wrote to stderr: for logs, never for clients. */
    readonly stderr = '',
    /** Its exit status (`exit`), null when a signal ended it. */
    readonly exitCode: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProcessError';
  }
}

export interface RunOptions {
  /** Written to stdin, which is then closed (empty when absent). */
  readonly input?: Buffer | string;
  readonly timeoutMs: number;
  /** Aborting kills the process (`aborted`, with the signal's reason as `cause`). */
  readonly signal?: AbortSignal;
  /** Largest stdout kept; past it the process is killed (`output_too_large`). Default 64 MiB. */
  readonly maxOutputBytes?: number;
  /** Added to the service's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Start it as the leader of its own process group and kill the whole group. */
  readonly processGroup?: boolean;
  /** This run's limits instead of the runner's. */
  readonly limits?: ChildLimits;
}

export interface RunResult {
  /** Exit status; null when a signal ended it (killAll). */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  /** The last `STDERR_TAIL_CHARS` characters of stderr, for logs. */
  readonly stderr: string;
}

export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
export const STDERR_TAIL_CHARS = 4000;

export interface ProcessRunnerOptions {
  /**
   * What a failure becomes: the service's own HTTP error (the kit's catalogue) with its wording.
   * Default: the ProcessError itself.
   */
  readonly mapError?: (error: ProcessError, options: Omit<RunOptions, 'env'>) => unknown;
  /** Every run's memory and CPU limits (a run may give its own). Default DEFAULT_CHILD_LIMITS. */
  readonly limits?: ChildLimits;
}

export class ProcessRunner {
  private readonly children = new Set<() => void>();

  constructor(private readonly options: ProcessRunnerOptions = {}) {}

  /** The limits a run gets when it gives none. */
  get limits(): ChildLimits {
    return this.options.limits ?? DEFAULT_CHILD_LIMITS;
  }

  /** Processes running now. */
  get running(): number {
    return this.children.size;
  }

  /**
   * Runs to the end and returns its exit status, stdout and stderr tail, whatever the status.
   * Rejects with a ProcessError: `not_found` (or `exit` when it could not be started for another
   * reason), `timeout`, `aborted`, `output_too_large`, `memory_limit`, `cpu_limit`.
   */
  async run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
    try {
      return await this.spawn(command, args, options);
    } catch (error) {
      throw this.mapped(error, options);
    }
  }

  /** Runs and returns stdout; an exit status other than 0 is a ProcessError of kind `exit`. */
  async output(command: string, args: readonly string[], options: RunOptions): Promise<Buffer> {
    const result = await this.run(command, args, options);
    if (result.code !== 0) {
      const how =
        result.code === null
          ? `was killed by ${String(result.signal)}`
          : `exited with status ${String(result.code)}`;
      throw this.mapped(
        new ProcessError('exit', command, `${command} ${how}`, result.stderr, result.code),
        options,
      );
    }
    return result.stdout;
  }

  /** Kills every process still running (shutdown); their `run` resolves with the signal. */
  killAll(): void {
    for (const kill of this.children) kill();
  }

  private mapped(error: unknown, options: Omit<RunOptions, 'env'>): unknown {
    const { mapError } = this.options;
    return error instanceof ProcessError && mapError !== undefined ? mapError(error, options) : error;
  }

  /**
   * Supervises a child started elsewhere (pipes on all three streams; `detached` when
   * `processGroup`), such as a warm process that loaded its model before the request came: writes
   * `input`, closes stdin, then behaves as `run`. `command` names it in errors. Start it with
   * `limitedCommand(…, runner.limits)` so it has the same limits; `options.limits` (default the
   * runner's) tells how to read its end.
   */
  async supervise(
    child: ChildProcessWithoutNullStreams,
    command: string,
    options: Omit<RunOptions, 'env'>,
  ): Promise<RunResult> {
    try {
      return await this.collect(child, command, options);
    } catch (error) {
      throw this.mapped(error, options);
    }
  }

  private spawn(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
    if (options.signal?.aborted) {
      return Promise.reject(
        new ProcessError(
          'aborted',
          command,
          `${command} was not started: the request was aborted`,
          '',
          null,
          {
            cause: options.signal.reason,
          },
        ),
      );
    }
    const limited = limitedCommand(command, args, options.limits ?? this.limits);
    const child = spawn(limited.command, limited.args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: options.processGroup === true,
      ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
    });
    return this.collect(child, command, options);
  }

  private collect(
    child: ChildProcessWithoutNullStreams,
    command: string,
    options: Omit<RunOptions, 'env'>,
  ): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      const group = options.processGroup === true;
      const maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
      const limits = options.limits ?? this.limits;
      const started = performance.now();
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      const memory = new MemoryWatch();
      let failure: ProcessError | undefined;
      let killed = false;
      const kill = (): void => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        killed = true;
        try {
          if (group && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
          else child.kill('SIGKILL');
        } catch {
          child.kill('SIGKILL'); // the group is gone already: the leader alone
        }
      };
      const fail = (error: ProcessError): void => {
        failure ??= error;
        kill();
      };
      this.children.add(kill);
      const timer = setTimeout(() => {
        fail(
          new ProcessError('timeout', command, `${command} took longer than ${String(options.timeoutMs)} ms`),
        );
      }, options.timeoutMs);
      const onAbort = (): void => {
        fail(
          new ProcessError('aborted', command, `${command} was stopped: the request was aborted`, '', null, {
            cause: options.signal?.reason,
          }),
        );
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.children.delete(kill);
      };
      child.stdout.on('data', (chunk: Buffer) => {
        if (failure !== undefined) return;
        size += chunk.length;
        if (size > maxOutput) {
          fail(
            new ProcessError(
              'output_too_large',
              command,
              `${command} wrote more than ${String(maxOutput)} bytes`,
            ),
          );
          return;
        }
        chunks.push(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        memory.add(text);
        stderr = (stderr + text).slice(-STDERR_TAIL_CHARS);
      });
      // EPIPE when the child exits before reading all its input: its exit status tells what happened.
      child.stdin.on('error', () => undefined);
      child.once('error', (error: NodeJS.ErrnoException) => {
        done();
        reject(startFailure(error, command));
      });
      // A killed child whose own children still hold its pipes (no processGroup) would never
      // 'close': once it is gone, its output is dropped.
      child.once('exit', () => {
        if (!killed) return;
        child.stdout.destroy();
        child.stderr.destroy();
      });
      child.once('close', (code, signal) => {
        done();
        failure ??= childLimitFailure(command, limits, {
          code,
          signal,
          killed,
          memoryExhausted: memory.exhausted,
          stderr,
          seconds: (performance.now() - started) / 1000,
        });
        if (failure !== undefined) {
          const { kind, message, cause } = failure;
          reject(new ProcessError(kind, command, message, stderr, code, { cause }));
          return;
        }
        resolve({ code, signal, stdout: Buffer.concat(chunks), stderr });
      });
      child.stdin.end(options.input ?? '');
    });
  }
}

/** Why a child could not be started (Node's spawn error). */
function startFailure(error: NodeJS.ErrnoException, command: string): ProcessError {
  // The error's `path` is what was spawned: prlimit itself when the command runs under limits.
  if (error.code === 'ENOENT' && error.path === PRLIMIT && command !== PRLIMIT) {
    return new ProcessError(
      'not_found',
      PRLIMIT,
      `${PRLIMIT} (util-linux) is not installed: every engine runs under its memory and CPU limits`,
      '',
      null,
      { cause: error },
    );
  }
  if (error.code === 'ENOENT') {
    return new ProcessError(
      'not_found',
      command,
      `${command} is not installed (not found on PATH)`,
      '',
      null,
      {
        cause: error,
      },
    );
  }
  return new ProcessError('exit', command, `${command} could not be started: ${error.message}`, '', null, {
    cause: error,
  });
}

/** The last non-empty line of a stderr tail, at most 300 characters (for logs and short details). */
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

/** `output()` on a runner of its own: for a call nothing needs to kill at shutdown. */
export function runProcess(command: string, args: readonly string[], options: RunOptions): Promise<Buffer> {
  return new ProcessRunner().output(command, args, options);
}
