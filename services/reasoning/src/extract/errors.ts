import { HttpError, type HttpErrorOptions } from '@clinicalsuite/kit';
import type { ExtractionResult } from './types.js';

/**
 * The LLM extractor failed (unreachable, refused, timed out, or answered something that is not the
 * findings JSON). `partial` holds what the rule pass found (null while the error has not reached
 * `extractFindings`): the pipeline answers from it, or, when the request required the LLM
 * (`use_llm: true`), the service answers 502 "extractor failed" with it.
 */
export class ExtractorError extends HttpError {
  readonly status = 502;
  readonly code = 'extractor_failed';
  override readonly openaiType = 'server_error';
  readonly partial: ExtractionResult | null;

  constructor(message: string, options: HttpErrorOptions & { partial?: ExtractionResult } = {}) {
    super(message, options);
    this.partial = options.partial ?? null;
  }

  /** The same error with the rule pass's findings attached. */
  withPartial(partial: ExtractionResult): ExtractorError {
    return new ExtractorError(this.message, { cause: this.cause, partial });
  }
}
