import type { IncomingHttpHeaders } from 'node:http';
import { BadGatewayError, GatewayTimeoutError, ServiceUnavailableError, type FieldIssue } from '../errors.js';

/**
 * How an outbound call's failures become errors: once, in the HttpClient, through a mapping each
 * client may adjust (its wording, which catalogue error an unreachable upstream is). The defaults
 * put it in the kit's catalogue (docs/architecture.md §7): unreachable → 503, no answer in time →
 * 504, the upstream's 503 and 429 → 503 with its Retry-After, its refused credentials, other 4xx
 * and 5xx → 502, each with the upstream's own message. An abort of the caller's signal is never
 * mapped: its reason is thrown as it is.
 */

/** The call never got a whole answer: nothing answered, or not in time. */
export interface TransportFailure {
  readonly kind: 'unreachable' | 'timeout';
  /** The client's name (`llm`, `codesearch`). */
  readonly upstream: string;
  /** "The LLM at http://llm:8000": the client's words for the upstream. */
  readonly label: string;
  readonly method: string;
  readonly path: string;
  /** The network's reason, short (`ECONNREFUSED`, `ECONNRESET`, a message). */
  readonly cause: string;
  readonly error: unknown;
  /** The deadline that passed (kind `timeout`), else the call's. */
  readonly timeoutMs: number;
  /** The response had begun (its headers arrived) when the body broke off or stalled. */
  readonly afterHeaders: boolean;
  /** The request may have reached the upstream (false: the connection was never made). */
  readonly delivered: boolean;
}

/** The upstream answered with a status outside 2xx. */
export interface StatusFailure {
  readonly upstream: string;
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body, the client's token taken out. */
  readonly text: string;
  /** The upstream's own message in its body (`upstreamDetail`), or undefined. */
  readonly detail: string | undefined;
  /** Its Retry-After in seconds (at least 1), when it sent one. */
  readonly retryAfterSeconds: number | undefined;
}

export interface FailureMapping {
  readonly unreachable?: (failure: TransportFailure) => Error;
  readonly timeout?: (failure: TransportFailure) => Error;
  readonly status?: (failure: StatusFailure) => Error;
  /** A 2xx body that should have been JSON was not (`HttpClient.json`). */
  readonly notJson?: (path: string, label: string) => Error;
}

export const DEFAULT_FAILURES: Required<FailureMapping> = {
  unreachable: (f) =>
    new ServiceUnavailableError(`${f.label} is unreachable (${f.cause})`, 5, { cause: f.error }),
  timeout: (f) =>
    new GatewayTimeoutError(`${f.label} did not answer within ${f.timeoutMs} ms`, { cause: f.error }),
  status: defaultStatusError,
  notJson: (path, label) => new BadGatewayError(`${label} answered ${path} with something other than JSON`),
};

function defaultStatusError(f: StatusFailure): Error {
  const said = f.detail === undefined ? '' : `: ${f.detail}`;
  if (f.status === 401 || f.status === 403)
    return new BadGatewayError(`${f.label} refused the credentials (${f.status})${said}`);
  if (f.status === 429 || f.status === 503) {
    const what = f.status === 429 ? 'is busy' : 'is not available';
    return new ServiceUnavailableError(`${f.label} ${what} (${f.status})${said}`, f.retryAfterSeconds ?? 5);
  }
  if (f.status >= 500) return new BadGatewayError(`${f.label} failed (${f.status})${said}`);
  return new BadGatewayError(`${f.label} refused the request (${f.status})${said}`);
}

/**
 * The message of an error body in the shapes the suite's services and their upstreams answer with:
 * the kit's `{detail: string}` or `{detail: [{loc, msg, type}]}` (422, with its field list),
 * a `{reason}`, the face service's `{success: false, message}`, OpenAI's `{error: {message}}`;
 * each message cut to `max` characters. `issueType` is the type of a field issue that has none.
 */
export function upstreamError(
  text: string,
  options: { readonly max?: number; readonly issueType?: string } = {},
): { message: string; issues?: FieldIssue[] } | undefined {
  const max = options.max ?? 500;
  const cut = (m: string): string => (m.length > max ? `${m.slice(0, max)}…` : m);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { detail?: unknown; message?: unknown; reason?: unknown; error?: { message?: unknown } };
  if (typeof b.detail === 'string') return { message: cut(b.detail) };
  const issues = fieldIssues(b.detail, options.issueType ?? 'invalid');
  if (issues !== undefined) {
    const cutIssues = issues.map((i) => ({ ...i, msg: cut(i.msg) }));
    return { message: cutIssues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '), issues: cutIssues };
  }
  if (typeof b.reason === 'string') return { message: cut(b.reason) };
  if (typeof b.message === 'string') return { message: cut(b.message) };
  if (typeof b.error?.message === 'string') return { message: cut(b.error.message) };
  return undefined;
}

/** `upstreamError`'s message alone. */
export function upstreamDetail(text: string, max = 500): string | undefined {
  return upstreamError(text, { max })?.message;
}

/** The field list of a 422 `{detail: [{loc, msg, type}]}` body, or undefined. */
export function fieldIssues(detail: unknown, defaultType = 'invalid'): FieldIssue[] | undefined {
  if (!Array.isArray(detail)) return undefined;
  return detail.flatMap((d: unknown): FieldIssue[] => {
    const i = d as { loc?: unknown; msg?: unknown; type?: unknown } | null;
    if (typeof i?.msg !== 'string') return [];
    const loc = Array.isArray(i.loc)
      ? i.loc.filter((p): p is string | number => typeof p === 'string' || typeof p === 'number')
      : ['body'];
    return [{ loc, msg: i.msg, type: typeof i.type === 'string' ? i.type : defaultType }];
  });
}

/**
 * A Retry-After header (delay-seconds or an HTTP date) in milliseconds from `now`, or undefined
 * when absent or unreadable.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const text = v.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
