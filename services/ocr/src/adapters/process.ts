import {
  GatewayTimeoutError,
  InternalError,
  PayloadTooLargeError,
  ProcessRunner,
  ServiceUnavailableError,
  ValidationError,
  type ChildLimits,
  type ProcessError,
  type RunOptions,
} from '@clinicalsuite/kit';

/**
 * The engines' command lines (tesseract, pdfinfo, pdftoppm) run by the kit's ProcessRunner: input
 * on stdin (images never touch the disk), bounded stdout, stderr kept for the service's logs only,
 * SIGKILL on the deadline, on abort and on shutdown, each process under the service's memory and
 * CPU limits. Its failures as the OCR service answers them: a page that needs more memory or CPU
 * than one process may have is the input's doing (413, 422), not the service's.
 */

/** A command that exited with a status other than 0 (stderr kept for the log and for pdf.ts). */
export class ProcessFailedError extends InternalError {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`${command} failed (exit ${String(exitCode)})`);
  }
}

export function ocrProcessError(error: ProcessError, options: RunOptions, limits: ChildLimits): unknown {
  switch (error.kind) {
    case 'memory_limit':
      return new PayloadTooLargeError(
        `The page needs more memory than one OCR process may use (${String(Math.round(limits.memoryBytes / 1024 ** 2))} MiB, ` +
          'CHILD_MEMORY_LIMIT): send a smaller image, fewer pixels or a lower dpi',
        { param: 'file', cause: error },
      );
    case 'cpu_limit':
      return new ValidationError(
        [
          {
            loc: ['body', 'file'],
            msg:
              `the page took more than ${String(limits.cpuSeconds)} s of CPU time (CHILD_CPU_SECONDS) in one OCR ` +
              'process and was stopped: the document is too complex to read',
            type: 'too_complex',
          },
        ],
        { cause: error },
      );
    case 'aborted':
      return error.cause ?? error;
    case 'timeout':
      return new GatewayTimeoutError(
        `The OCR engine took longer than ${String(options.timeoutMs)} ms on one page and was stopped`,
      );
    case 'not_found':
      return new ServiceUnavailableError(error.message);
    case 'output_too_large':
      return new InternalError(error.message);
    case 'exit':
      return new ProcessFailedError(error.command, error.exitCode, error.stderr);
  }
}

/** A runner whose processes run under `limits` and whose failures are the OCR service's HTTP errors. */
export function ocrProcessRunner(limits: ChildLimits): ProcessRunner {
  return new ProcessRunner({
    limits,
    mapError: (error, options) => ocrProcessError(error, options, options.limits ?? limits),
  });
}
