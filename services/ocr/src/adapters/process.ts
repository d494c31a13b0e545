import {
  GatewayTimeoutError,
  InternalError,
  ProcessRunner,
  ServiceUnavailableError,
  type ProcessError,
  type RunOptions,
} from '@clinicalsuite/kit';

/**
 * The engines' command lines (tesseract, pdfinfo, pdftoppm) run by the kit's ProcessRunner: input
 * on stdin (images never touch the disk), bounded stdout, stderr kept for the service's logs only,
 * SIGKILL on the deadline, on abort and on shutdown. Its failures as the OCR service answers them.
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

export function ocrProcessError(error: ProcessError, options: RunOptions): unknown {
  switch (error.kind) {
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

/** A runner whose failures are the OCR service's HTTP errors. */
export function ocrProcessRunner(): ProcessRunner {
  return new ProcessRunner({ mapError: ocrProcessError });
}
