/** Errors of the model store. Messages are one line, name the source, and say what to do. */

export interface SourceFetchErrorOptions {
  /** Whether trying the same source again may help (network errors, 5xx, 429). */
  readonly retryable: boolean;
  /** The HTTP status, when the failure was one. */
  readonly httpStatus?: number;
  readonly cause?: unknown;
}

/** One source could not deliver the file. */
export class SourceFetchError extends Error {
  readonly code = 'model_source_failed';
  readonly source: string;
  /** The message without the source in front. */
  readonly reason: string;
  readonly retryable: boolean;
  readonly httpStatus: number | undefined;

  constructor(source: string, reason: string, options: SourceFetchErrorOptions) {
    super(`${source}: ${reason}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SourceFetchError';
    this.source = source;
    this.reason = reason;
    this.retryable = options.retryable;
    this.httpStatus = options.httpStatus;
  }
}

export interface SourceFailure {
  readonly source: string;
  readonly reason: string;
}

/** Every source of a model failed: lists each reason and where the user can put the file. */
export class ModelFetchError extends Error {
  readonly code = 'model_fetch_failed';
  readonly modelId: string;
  /** Where the file belongs; a user without network access can place it there. */
  readonly path: string;
  readonly failures: readonly SourceFailure[];

  constructor(modelId: string, path: string, failures: readonly SourceFailure[], sha256?: string) {
    const tried = failures.map((f, i) => `(${i + 1}) ${f.source}: ${f.reason}`).join('; ');
    const checksum = sha256 === undefined ? '' : ` with sha256 ${sha256}`;
    super(
      `model "${modelId}" is not available: ${failures.length === 0 ? 'it has no sources' : `every source failed: ${tried}`}. ` +
        `Supply the file yourself: place it at ${path}${checksum}, then run again.`,
    );
    this.name = 'ModelFetchError';
    this.modelId = modelId;
    this.path = path;
    this.failures = failures;
  }
}

/** A reason for any thrown value, without the stack. */
export function reasonOf(err: unknown): string {
  if (err instanceof SourceFetchError) return err.reason;
  if (err instanceof Error) return err.message;
  return String(err);
}
