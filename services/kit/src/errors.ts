/**
 * The one error catalogue of ClinicalSuite. Every error a service answers with is one of these
 * classes: a stable `code`, an HTTP `status`, the OpenAI error `type` used on `/v1/*`, and an
 * optional `param`. The error middleware renders them; nothing else writes error bodies.
 */

export interface FieldIssue {
  /** Where the problem is: `['body', 'messages', 0, 'role']`, FastAPI style. */
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
}

export interface HttpErrorOptions {
  readonly param?: string;
  readonly cause?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export abstract class HttpError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  /** The `error.type` of an OpenAI-shaped body. */
  readonly openaiType: string = 'invalid_request_error';
  readonly param: string | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, options: HttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }
}

export class BadRequestError extends HttpError {
  readonly status = 400;
  readonly code: string;
  constructor(message: string, options: HttpErrorOptions & { code?: string } = {}) {
    super(message, options);
    this.code = options.code ?? 'bad_request';
  }
}

export class UnauthorizedError extends HttpError {
  readonly status = 401;
  readonly code = 'invalid_api_key';
  override readonly openaiType = 'authentication_error';
}

export class ForbiddenError extends HttpError {
  readonly status = 403;
  readonly code: string;
  override readonly openaiType = 'permission_error';
  constructor(message: string, options: HttpErrorOptions & { code?: string } = {}) {
    super(message, options);
    this.code = options.code ?? 'forbidden';
  }
}

export class NotFoundError extends HttpError {
  readonly status = 404;
  readonly code = 'not_found';
  override readonly openaiType = 'not_found_error';
}

export class ConflictError extends HttpError {
  readonly status = 409;
  readonly code = 'conflict';
}

export class PayloadTooLargeError extends HttpError {
  readonly status = 413;
  readonly code = 'payload_too_large';
}

export class UnsupportedMediaTypeError extends HttpError {
  readonly status = 415;
  readonly code = 'unsupported_media_type';
}

export class ValidationError extends HttpError {
  /** 422 by default; 400 where an API's own spec says so (OpenAI-style chat completions). */
  readonly status: 400 | 422;
  readonly code = 'validation_error';
  readonly issues: readonly FieldIssue[];
  constructor(issues: readonly FieldIssue[], options: HttpErrorOptions & { status?: 400 | 422 } = {}) {
    super(describeIssues(issues), { ...options, ...paramOf(issues) });
    this.status = options.status ?? 422;
    this.issues = issues;
  }
}

export class TooManyRequestsError extends HttpError {
  readonly status = 429;
  readonly code = 'rate_limit_exceeded';
  override readonly openaiType = 'rate_limit_error';
  constructor(message: string, retryAfterSeconds: number, options: HttpErrorOptions = {}) {
    super(message, withRetryAfter(options, retryAfterSeconds));
  }
}

export class InternalError extends HttpError {
  readonly status = 500;
  readonly code = 'internal_error';
  override readonly openaiType = 'server_error';
}

export class BadGatewayError extends HttpError {
  readonly status = 502;
  readonly code = 'upstream_error';
  override readonly openaiType = 'server_error';
}

export class ServiceUnavailableError extends HttpError {
  readonly status = 503;
  readonly code = 'service_unavailable';
  override readonly openaiType = 'server_error';
  constructor(message: string, retryAfterSeconds = 5, options: HttpErrorOptions = {}) {
    super(message, withRetryAfter(options, retryAfterSeconds));
  }
}

/** The request itself did not all arrive in time (a body shorter than its length, a stalled upload). */
export class RequestTimeoutError extends HttpError {
  readonly status = 408;
  readonly code = 'request_timeout';
}

export class GatewayTimeoutError extends HttpError {
  readonly status = 504;
  readonly code = 'timeout';
  override readonly openaiType = 'timeout_error';
}

/**
 * The client went away before the answer. Never sent (nobody is listening); logged as 499 like
 * nginx does, and used as the abort reason so the work stops.
 */
export class ClientClosedRequestError extends HttpError {
  readonly status = 499;
  readonly code = 'client_closed_request';
  constructor() {
    super('The client closed the connection before the response was complete');
  }
}

function withRetryAfter(options: HttpErrorOptions, seconds: number): HttpErrorOptions {
  return {
    ...options,
    headers: { ...options.headers, 'retry-after': String(Math.max(1, Math.ceil(seconds))) },
  };
}

function describeIssues(issues: readonly FieldIssue[]): string {
  if (issues.length === 0) return 'Request validation failed';
  const parts = issues.slice(0, 5).map((i) => `${formatLoc(i.loc)}: ${i.msg}`);
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
  return `Request validation failed: ${parts.join('; ')}${more}`;
}

function paramOf(issues: readonly FieldIssue[]): { param?: string } {
  const first = issues[0];
  if (first === undefined) return {};
  const path = first.loc.slice(1);
  return path.length > 0 ? { param: formatLoc(path) } : {};
}

/** `['body', 'messages', 0, 'role']` → `body.messages[0].role` */
export function formatLoc(loc: readonly (string | number)[]): string {
  return loc.reduce<string>((acc, part) => {
    if (typeof part === 'number') return `${acc}[${part}]`;
    return acc === '' ? part : `${acc}.${part}`;
  }, '');
}

/**
 * Why a network call failed, short enough for a message: the system code (`ECONNREFUSED`,
 * `ENOTFOUND`, `ECONNRESET`) of the error or its cause (fetch wraps it), else its message.
 */
export function errorCause(error: unknown): string {
  const e = error as { cause?: { code?: unknown; message?: unknown }; code?: unknown; message?: unknown };
  if (typeof e.cause?.code === 'string') return e.cause.code;
  if (typeof e.code === 'string') return e.code;
  if (typeof e.cause?.message === 'string') return e.cause.message;
  return typeof e.message === 'string' ? e.message : 'unknown error';
}
