/**
 * HTTP(S) byte source with resume: asks for `Range: bytes=<offset>-` and reads the answer as
 * 206 (resume), 200 (the server ignored the range: restart from zero) or 416 (the partial is
 * already whole, or bad: restart). Redirects are followed (fetch drops `Authorization` when a
 * redirect leaves the origin, as the hub's CDN redirects do).
 */
import { STATUS_CODES } from 'node:http';
import { emptyBody, discard, type ByteSource, type OpenedBody } from './byte-source.js';
import { SourceFetchError } from './errors.js';

export interface HttpTarget {
  /** The source as the user wrote it (`hf://…` or the URL), used in messages. */
  readonly uri: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Appended to 401/403/404 messages, e.g. how to set a token. */
  readonly hint?: (status: number) => string | undefined;
}

export interface HttpOptions {
  readonly signal?: AbortSignal | undefined;
}

const USER_AGENT = 'clinicalsuite-models/0.1 (+node fetch)';

export function httpSource(target: HttpTarget, options: HttpOptions = {}): ByteSource {
  return { open: (offset) => openHttp(target, offset, options) };
}

async function openHttp(target: HttpTarget, offset: number, options: HttpOptions): Promise<OpenedBody> {
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    // Byte ranges are of the stored bytes; never let a transfer encoding change them.
    'accept-encoding': 'identity',
    ...target.headers,
  };
  if (offset > 0) headers['range'] = `bytes=${offset}-`;
  let res: Response;
  try {
    res = await fetch(target.url, { headers, redirect: 'follow', signal: options.signal ?? null });
  } catch (err) {
    // An unknown host is not going to appear on retry (EAI_AGAIN is the transient DNS failure).
    const code = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    throw new SourceFetchError(target.uri, `cannot connect: ${describeNetworkError(err)}`, {
      retryable: !options.signal?.aborted && code !== 'ENOTFOUND',
      cause: err,
    });
  }
  const body = res.body;
  if (res.status === 206 && body) {
    const range = parseContentRange(res.headers.get('content-range'));
    if (range?.start === offset) return { start: offset, totalBytes: range.total, body };
    await body.cancel();
    return openHttp(target, 0, options);
  }
  if (res.status === 200 && body) {
    const length = Number(res.headers.get('content-length') ?? NaN);
    return { start: 0, totalBytes: Number.isSafeInteger(length) ? length : undefined, body };
  }
  if (body) await discard(body);
  if (res.status === 416 && offset > 0) {
    const total = parseContentRange(res.headers.get('content-range'))?.total;
    if (total === offset) return { start: offset, totalBytes: total, body: emptyBody() };
    return openHttp(target, 0, options);
  }
  throw statusError(target, res);
}

function statusError(target: HttpTarget, res: Response): SourceFetchError {
  const status = res.status;
  const text = res.statusText || STATUS_CODES[status] || 'HTTP error';
  const hint = target.hint?.(status);
  const retryable = status >= 500 || status === 429 || status === 408;
  return new SourceFetchError(target.uri, `${status} ${text}${hint ? ` — ${hint}` : ''}`, {
    retryable,
    httpStatus: status,
  });
}

// `bytes 100-199/1000` gives start 100 and total 1000; `bytes *\/1000` (416) gives total 1000.
export function parseContentRange(value: string | null): { start?: number; total?: number } | undefined {
  const m = /^bytes\s+(?:(\d+)-\d+|\*)\/(\d+|\*)$/i.exec(value?.trim() ?? '');
  if (!m) return undefined;
  return {
    ...(m[1] === undefined ? {} : { start: Number(m[1]) }),
    ...(m[2] === undefined || m[2] === '*' ? {} : { total: Number(m[2]) }),
  };
}

/** undici hides the reason in `cause` (`fetch failed` ← ECONNREFUSED): show both. */
export function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return `${err.message} (${code ? `${code}: ` : ''}${cause.message})`;
  }
  return err.message;
}
