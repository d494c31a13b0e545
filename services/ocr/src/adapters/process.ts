import { spawn, type ChildProcess } from 'node:child_process';
import { GatewayTimeoutError, InternalError, ServiceUnavailableError } from '@clinicalsuite/kit';

/**
 * Runs the engines' command lines (tesseract, pdfinfo, pdftoppm): the input on stdin (images never
 * touch the disk), stdout collected up to a bound, stderr kept only for the service's own logs
 * (never sent to clients), SIGKILL on the deadline, on abort and on shutdown.
 */

export interface RunOptions {
  readonly input?: Buffer;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly env?: Readonly<Record<string, string>>;
  /** Largest stdout kept; past it the process is killed (default 64 MiB). */
  readonly maxOutputBytes?: number;
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: Buffer;
  /** The last 4 KB of stderr, for logs. */
  readonly stderr: string;
}

/** A command that exited with a status other than 0. */
export class ProcessFailedError extends InternalError {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`${command} failed (exit ${String(exitCode)})`);
  }
}

export class ProcessRunner {
  private readonly children = new Set<ChildProcess>();

  /** Processes running now. */
  get running(): number {
    return this.children.size;
  }

  async run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
    options.signal?.throwIfAborted();
    const maxOutput = options.maxOutputBytes ?? 64 * 1024 * 1024;
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    this.children.add(child);
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let killedFor: 'timeout' | 'abort' | 'output' | undefined;
    const kill = (why: 'timeout' | 'abort' | 'output'): void => {
      killedFor ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill('timeout'), options.timeoutMs);
    const onAbort = (): void => kill('abort');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxOutput) kill('output');
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4096);
    });
    // A process that exits before reading all its input closes the pipe: not an error of ours.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? Buffer.alloc(0));
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        child.once('error', reject);
        child.once('close', (c) => resolve(c));
      });
      if (killedFor === 'abort') throw options.signal?.reason ?? new Error('aborted');
      if (killedFor === 'timeout') {
        throw new GatewayTimeoutError(
          `The OCR engine took longer than ${String(options.timeoutMs)} ms on one page and was stopped`,
        );
      }
      if (killedFor === 'output')
        throw new InternalError(`${command} wrote more than ${String(maxOutput)} bytes`);
      return { code, stdout: Buffer.concat(chunks), stderr };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new ServiceUnavailableError(`${command} is not installed (not found on PATH)`);
      }
      throw error;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      this.children.delete(child);
    }
  }

  /** Runs and returns stdout; a non-zero exit is a ProcessFailedError (stderr kept for the log). */
  async output(command: string, args: readonly string[], options: RunOptions): Promise<Buffer> {
    const result = await this.run(command, args, options);
    if (result.code !== 0) throw new ProcessFailedError(command, result.code, result.stderr);
    return result.stdout;
  }

  /** Kills every process still running (shutdown). */
  killAll(): void {
    for (const child of this.children) child.kill('SIGKILL');
  }
}
