import { spawn } from 'node:child_process';

/**
 * Runs a binary with its input on stdin (never in argv: texts are clinical data and argv is
 * visible to every user of the machine), collects stdout, and kills it (SIGKILL) on the timeout,
 * on abort, or when it writes more than `maxOutputBytes`. stderr is kept (its tail) for the
 * service's logs only; it never reaches a client.
 */

export interface RunOptions {
  readonly input?: Buffer | string;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly maxOutputBytes: number;
}

export type ProcessFailureKind = 'not_found' | 'exit' | 'timeout' | 'aborted' | 'output_too_large';

export class ProcessError extends Error {
  constructor(
    readonly kind: ProcessFailureKind,
    readonly binary: string,
    message: string,
    /** The end of what it wrote to stderr: for logs, never for clients. */
    readonly stderr = '',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProcessError';
  }
}

const STDERR_TAIL = 2000;

export function runProcess(binary: string, args: readonly string[], options: RunOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(new ProcessError('aborted', binary, `${binary} was not started: the request was aborted`));
      return;
    }
    const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let stderr = '';
    let failure: ProcessError | undefined;
    const fail = (error: ProcessError): void => {
      failure ??= error;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      fail(new ProcessError('timeout', binary, `${binary} took longer than ${String(options.timeoutMs)} ms`));
    }, options.timeoutMs);
    const onAbort = (): void => {
      fail(new ProcessError('aborted', binary, `${binary} was stopped: the request was aborted`));
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > options.maxOutputBytes) {
        fail(
          new ProcessError(
            'output_too_large',
            binary,
            `${binary} wrote more than ${String(options.maxOutputBytes)} bytes`,
          ),
        );
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    // EPIPE when the child exits before reading everything: its exit status tells what happened.
    child.stdin.on('error', () => undefined);
    child.once('error', (error: NodeJS.ErrnoException) => {
      cleanup();
      reject(
        error.code === 'ENOENT'
          ? new ProcessError('not_found', binary, `${binary} is not installed (not found on PATH)`, '', {
              cause: error,
            })
          : new ProcessError('exit', binary, `${binary} could not be started: ${error.message}`, '', {
              cause: error,
            }),
      );
    });
    child.once('close', (code, signal) => {
      cleanup();
      if (failure !== undefined) {
        reject(new ProcessError(failure.kind, binary, failure.message, stderr));
        return;
      }
      if (code !== 0) {
        const how = code === null ? `was killed by ${String(signal)}` : `exited with status ${String(code)}`;
        reject(new ProcessError('exit', binary, `${binary} ${how}`, stderr));
        return;
      }
      resolve(Buffer.concat(chunks));
    });
    child.stdin.end(options.input ?? '');
  });
}
