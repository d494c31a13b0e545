import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Registry } from 'prom-client';
import { errorCause } from '../errors.js';
import type { Logger } from '../logger.js';
import type { KitMetrics } from '../metrics.js';
import { withoutTrailingSlashes } from '../urls.js';
import { CallDeadline, abortReason } from './deadline.js';
import {
  DEFAULT_FAILURES,
  retryAfterMs,
  upstreamDetail,
  type FailureMapping,
  type StatusFailure,
  type TransportFailure,
} from './failures.js';
import { outboundMetrics, statusOutcome, type OutboundMetrics, type OutboundOutcome } from './metrics.js';
import { OutboundResponse } from './response.js';
import { SendFailure, exchange, type Target } from './transport.js';

/**
 * The one outbound HTTP client of the suite (docs/architecture.md, "How a service is assembled"):
 * one `HttpClient` per upstream, with its base URL, a fixed name for metrics and logs, its bearer
 * token and a default timeout. Every call
 *
 * - has a deadline (`timeoutMs`, per call: its attempts, the waits between them and the body) and
 *   takes the caller's signal (the route's), so it never outlives the request it serves; a timeout
 *   and an abort are told apart: the abort's reason is thrown as it is, a timeout is mapped;
 * - is retried only where that is safe: a connection that was never made (refused, DNS) for any
 *   method; a connection failure after sending, and the statuses `retry.statuses` (502, 503), only
 *   for idempotent methods or a call marked `safe`, with exponential backoff and the upstream's
 *   Retry-After honoured when it is within `retry.maxRetryAfterMs` (longer: the answer is final);
 * - fails through one mapping onto the kit's error catalogue (failures.ts), which a client adjusts
 *   to its words, the upstream's own message kept and the client's token never in it;
 * - is counted and timed on the service's registry (metrics.ts).
 *
 * `send()` resolves once the headers arrived, with the body to read (`text()`, `chunks()`,
 * `events()` for server-sent events) or `cancel()`; `request()` reads the whole body within the
 * retries; `json()` also requires a 2xx and parses it.
 */

export type OutboundMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

const IDEMPOTENT = new Set<string>(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

export interface RetryPolicy {
  /** Attempts after the first (default 0: none). */
  readonly retries?: number;
  /** The first wait; doubled for each further retry, the second half of it random (default 200). */
  readonly backoffMs?: number;
  /** The longest wait between attempts, Retry-After aside (default 5000). */
  readonly maxBackoffMs?: number;
  /** The longest Retry-After waited for; a longer one makes the answer final (default 2000). */
  readonly maxRetryAfterMs?: number;
  /** The statuses retried (default 502 and 503). */
  readonly statuses?: readonly number[];
  /** Called before each retry with its reason: `connection` or `status_<code>`. */
  readonly onRetry?: (reason: string) => void;
}

export interface HttpClientOptions {
  /** The upstream's fixed name, the `upstream` label of the metrics: `llm`, `codesearch`. */
  readonly name: string;
  /** Its base URL; a `user:token@` part is taken as the bearer token when `token` is not given. */
  readonly baseUrl: string;
  /** The upstream in messages: "The LLM at http://llm:8000" (default `<name> at <baseUrl>`). */
  readonly label?: string;
  /** The bearer token it accepts, or a function that gives the current one. */
  readonly token?: string | (() => string | undefined) | undefined;
  /** The default deadline of a call, in ms (`Infinity`: none, only the caller's signal). */
  readonly timeoutMs: number;
  readonly retry?: RetryPolicy;
  /** How failures become errors, where the defaults do not fit (failures.ts). */
  readonly failures?: FailureMapping;
  /** Headers sent with every call (default `accept: application/json`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The service's metrics (or their registry); without them nothing is counted. */
  readonly metrics?: KitMetrics | Registry | undefined;
  /** Retries are logged at warn; never a body, a token or a path. */
  readonly logger?: Logger | undefined;
}

export interface CallSpec {
  /** Default GET. */
  readonly method?: OutboundMethod;
  /** Appended to the base URL, query included: `/v1/chat/completions`. */
  readonly path: string;
  /** A body sent as `application/json`. */
  readonly json?: unknown;
  /** A body as it is (a FormData as multipart). */
  readonly body?: string | Uint8Array | FormData;
  readonly headers?: Readonly<Record<string, string>>;
  /** The caller's signal: its abort stops the call, and its reason is what the call throws. */
  readonly signal?: AbortSignal | undefined;
  /** This call's deadline (default the client's). */
  readonly timeoutMs?: number;
  /** Sending it twice does no harm (a POST that changes nothing); idempotent methods are. */
  readonly safe?: boolean;
  /** This call's retries (default the client's). */
  readonly retries?: number;
  /** This call's failure mapping, over the client's. */
  readonly failures?: FailureMapping;
}

export interface OutboundResult {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** Attempts made (1 without retries). */
  readonly attempts: number;
}

interface Call {
  readonly method: OutboundMethod;
  readonly path: string;
  readonly payload: Buffer | undefined;
  readonly contentType: string | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  readonly signal: AbortSignal | undefined;
  readonly deadline: CallDeadline;
  readonly safe: boolean;
  readonly retries: number;
  readonly failures: Required<FailureMapping>;
  /** How the failure of the current attempt was classified. */
  failed: 'unreachable' | 'timeout' | 'aborted' | undefined;
  /** The response went to the caller: the deadline ends with its body. */
  handedOver: boolean;
}

const DEFAULT_RETRY = {
  retries: 0,
  backoffMs: 200,
  maxBackoffMs: 5000,
  maxRetryAfterMs: 2000,
  statuses: [502, 503],
} as const;

export class HttpClient {
  readonly name: string;
  /** The base URL without credentials, query or trailing slash: for messages, logs and status. */
  readonly baseUrl: string;
  readonly label: string;
  private readonly target: Target;
  private readonly token: () => string | undefined;
  private readonly retry: Required<Omit<RetryPolicy, 'onRetry'>> & Pick<RetryPolicy, 'onRetry'>;
  private readonly failures: Required<FailureMapping>;
  private readonly defaultHeaders: Readonly<Record<string, string>>;
  private readonly metrics: OutboundMetrics | undefined;

  constructor(private readonly options: HttpClientOptions) {
    this.name = options.name;
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError(`${options.name}: ${url.protocol} URLs are not supported (http or https)`);
    const secret = decodeURIComponent(url.password !== '' ? url.password : url.username);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    this.baseUrl = withoutTrailingSlashes(url.toString());
    this.label = options.label ?? `${options.name} at ${this.baseUrl}`;
    this.target = {
      https: url.protocol === 'https:',
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? undefined : Number(url.port),
      basePath: withoutTrailingSlashes(url.pathname),
    };
    const { token } = options;
    const fixed =
      typeof token === 'string' ? token : token === undefined && secret !== '' ? secret : undefined;
    this.token = typeof token === 'function' ? token : () => fixed;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.failures = { ...DEFAULT_FAILURES, ...options.failures };
    this.defaultHeaders = options.headers ?? { accept: 'application/json' };
    const registry = options.metrics === undefined ? undefined : registryOf(options.metrics);
    this.metrics = registry === undefined ? undefined : outboundMetrics(registry);
  }

  /** Sends the call; resolves with the response (any status) once its headers arrived. */
  async send(spec: CallSpec): Promise<OutboundResponse> {
    const call = await this.prepare(spec);
    try {
      const { response } = await this.attempts(call, false);
      if (response.settled) call.deadline.release();
      return response;
    } catch (error) {
      call.deadline.release();
      throw error;
    }
  }

  /** Sends the call and reads its whole body (any status), the body's reading retried too. */
  async request(spec: CallSpec): Promise<OutboundResult> {
    const call = await this.prepare(spec);
    try {
      const { response, text } = await this.attempts(call, true);
      return {
        status: response.status,
        ok: response.ok,
        headers: response.headers,
        text: text ?? '',
        attempts: response.attempts,
      };
    } finally {
      call.deadline.release();
    }
  }

  /** A 2xx answer's body parsed as JSON; any other status is thrown as its mapped error. */
  async json(spec: CallSpec): Promise<unknown> {
    const result = await this.request(spec);
    const failures = spec.failures === undefined ? this.failures : { ...this.failures, ...spec.failures };
    if (!result.ok) throw this.statusError(result, spec);
    try {
      return JSON.parse(result.text) as unknown;
    } catch {
      throw failures.notJson(spec.path, this.label);
    }
  }

  /** The mapped error of an answer outside 2xx (`send()` and `request()` return those). */
  statusError(
    result: Pick<OutboundResult, 'status' | 'headers' | 'text'>,
    spec: Pick<CallSpec, 'method' | 'path' | 'failures'> = { path: '' },
  ): Error {
    const text = this.redact(result.text);
    const after = retryAfterMs(result.headers['retry-after']);
    const failure: StatusFailure = {
      upstream: this.name,
      label: this.label,
      method: spec.method ?? 'GET',
      path: spec.path,
      status: result.status,
      headers: result.headers,
      text,
      detail: upstreamDetail(text),
      retryAfterSeconds: after === undefined ? undefined : Math.max(1, Math.ceil(after / 1000)),
    };
    return (spec.failures?.status ?? this.failures.status)(failure);
  }

  /** The text with the client's token taken out. */
  redact(text: string): string {
    const token = this.token();
    return token === undefined || token === '' ? text : text.replaceAll(token, '[REDACTED]');
  }

  private async prepare(spec: CallSpec): Promise<Call> {
    let payload: Buffer | undefined;
    let contentType: string | undefined;
    if (spec.json !== undefined) {
      payload = Buffer.from(JSON.stringify(spec.json), 'utf8');
      contentType = 'application/json';
    } else if (typeof spec.body === 'string') {
      payload = Buffer.from(spec.body, 'utf8');
    } else if (spec.body instanceof FormData) {
      // The platform's multipart encoder, with its boundary in the content type.
      const encoded = new Response(spec.body);
      contentType = encoded.headers.get('content-type') ?? undefined;
      payload = Buffer.from(await encoded.arrayBuffer());
    } else if (spec.body !== undefined) {
      payload = Buffer.from(spec.body.buffer, spec.body.byteOffset, spec.body.byteLength);
    }
    const method = spec.method ?? 'GET';
    return {
      method,
      path: spec.path,
      payload,
      contentType,
      headers: spec.headers,
      signal: spec.signal,
      deadline: new CallDeadline(spec.signal, spec.timeoutMs ?? this.options.timeoutMs),
      safe: spec.safe ?? IDEMPOTENT.has(method),
      retries: spec.retries ?? this.retry.retries,
      failures: spec.failures === undefined ? this.failures : { ...this.failures, ...spec.failures },
      failed: undefined,
      handedOver: false,
    };
  }

  private headersFor(call: Call): OutgoingHttpHeaders {
    const token = this.token();
    const headers: OutgoingHttpHeaders = {
      ...this.defaultHeaders,
      ...(call.contentType === undefined ? {} : { 'content-type': call.contentType }),
      ...call.headers,
    };
    if (token !== undefined && token !== '') headers['authorization'] = `Bearer ${token}`;
    if (call.payload !== undefined) headers['content-length'] = String(call.payload.length);
    else if (call.method === 'POST' || call.method === 'PUT' || call.method === 'PATCH')
      headers['content-length'] = '0';
    return headers;
  }

  private async attempts(
    call: Call,
    readBody: boolean,
  ): Promise<{ response: OutboundResponse; text: string | undefined }> {
    let retriesLeft = call.retries;
    let staleRetried = false;
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      call.failed = undefined;
      let res: IncomingMessage;
      try {
        res = await exchange(this.target, {
          method: call.method,
          path: call.path,
          headers: this.headersFor(call),
          payload: call.payload,
          signal: call.deadline.signal,
        });
      } catch (error) {
        const sent = error instanceof SendFailure ? error : new SendFailure(error, true, false);
        const kind = failureKind(call);
        const mapped = this.transportError(call, sent.error, false, sent.delivered);
        this.record(call, started, kind);
        if (kind !== 'unreachable') throw mapped;
        // A kept-alive connection the upstream closed meanwhile: once more at once, where safe.
        if (sent.reusedSocket && call.safe && !staleRetried) {
          staleRetried = true;
          continue;
        }
        if (retriesLeft > 0 && (call.safe || !sent.delivered)) {
          retriesLeft--;
          await this.backoff(call, attempt, 'connection', undefined);
          continue;
        }
        throw mapped;
      }
      const response = new OutboundResponse(res, attempt, call.deadline, {
        fail: (error) => this.transportError(call, error, true),
        done: (outcome) => {
          this.record(call, started, outcome ?? call.failed ?? statusOutcome(res.statusCode ?? 0));
          if (call.handedOver) call.deadline.release();
        },
      });
      const retryStatus =
        !response.ok && call.safe && retriesLeft > 0 && this.retry.statuses.includes(response.status);
      if (!readBody && !retryStatus) {
        call.handedOver = true;
        return { response, text: undefined };
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (failureKind(call) === 'unreachable' && call.safe && retriesLeft > 0) {
          retriesLeft--;
          await this.backoff(call, attempt, 'connection', undefined);
          continue;
        }
        throw error;
      }
      if (retryStatus) {
        const after = retryAfterMs(response.headers['retry-after']);
        if (after === undefined || after <= this.retry.maxRetryAfterMs) {
          retriesLeft--;
          await this.backoff(call, attempt, `status_${response.status}`, after);
          continue;
        }
      }
      call.handedOver = true;
      return { response, text };
    }
  }

  private async backoff(
    call: Call,
    attempt: number,
    reason: string,
    afterMs: number | undefined,
  ): Promise<void> {
    this.retry.onRetry?.(reason);
    this.metrics?.retries.inc({ upstream: this.name, method: call.method, reason });
    const base = Math.min(this.retry.backoffMs * 2 ** (attempt - 1), this.retry.maxBackoffMs);
    // Half the backoff random, so replicas retrying together spread out.
    const waitMs = Math.max(base / 2 + Math.random() * (base / 2), afterMs ?? 0);
    this.options.logger?.warn(
      { upstream: this.name, method: call.method, attempt, reason, waitMs: Math.round(waitMs) },
      'retrying a call to an upstream',
    );
    try {
      await sleep(waitMs, undefined, { signal: call.deadline.signal });
    } catch (error) {
      throw this.transportError(call, error, false);
    }
  }

  /** A failure of the wire: the caller's abort as it is, else a timeout or an unreachable upstream, mapped. */
  private transportError(call: Call, error: unknown, afterHeaders: boolean, delivered = true): Error {
    const kind = failureKind(call);
    call.failed = kind;
    if (kind === 'aborted')
      return call.signal === undefined ? new Error('aborted') : abortReason(call.signal);
    const failure: TransportFailure = {
      kind,
      upstream: this.name,
      label: this.label,
      method: call.method,
      path: call.path,
      cause: errorCause(error),
      error,
      timeoutMs: call.deadline.ms,
      afterHeaders,
      delivered,
    };
    return kind === 'timeout' ? call.failures.timeout(failure) : call.failures.unreachable(failure);
  }

  private record(call: Call, started: number, outcome: OutboundOutcome): void {
    if (this.metrics === undefined) return;
    const labels = { upstream: this.name, method: call.method, outcome };
    this.metrics.requests.inc(labels);
    this.metrics.duration.observe(labels, (performance.now() - started) / 1000);
  }
}

/** Why the call's wire failed: the caller gave up, its deadline passed, or else the network. */
function failureKind(call: Call): 'aborted' | 'timeout' | 'unreachable' {
  if (call.deadline.callerAborted) return 'aborted';
  return call.deadline.expired ? 'timeout' : 'unreachable';
}

function registryOf(metrics: KitMetrics | Registry): Registry {
  return 'registry' in metrics ? metrics.registry : metrics;
}
