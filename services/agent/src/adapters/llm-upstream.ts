import { performance } from 'node:perf_hooks';
import type { IncomingMessage } from 'node:http';
import { errorCause, loggableUrl, withoutTrailingSlashes } from '@clinicalsuite/kit';
import { isOk, readText, send } from './http-client.js';
import type { LlmCall, LlmUsage, UpstreamId } from '../domain/types.js';
import { modelIds, upstreamMessage } from '@clinicalsuite/kit/llm';
import {
  CLIENT_PARAMS,
  CONTEXT_OVERFLOW,
  UNSUPPORTED,
  VALIDATION,
  errorBody,
} from './upstream-error-body.js';

/**
 * One OpenAI-compatible LLM upstream (`alpha4_service`, `beta3_service` or `beta_service`): a
 * non-streamed completion, a streamed one read from its SSE, and a health probe. Plain fetch (its
 * keep-alive pool) rather than the `openai` SDK: the retry and fallback policy is the router's
 * (upstream-pool.ts), and every failure comes back as an `UpstreamFailure` saying whether another
 * attempt could help.
 */

export type FailureKind =
  /** Connection refused, reset, DNS: nothing answered. */
  | 'connection'
  /** The deadline passed (whole call, or a stream's first fragment). */
  | 'timeout'
  /** A status the upstream chose: 4xx/5xx. */
  | 'status'
  /** 2xx with a body that is not a completion. */
  | 'bad_response';

export class UpstreamFailure extends Error {
  constructor(
    readonly upstream: UpstreamId,
    readonly kind: FailureKind,
    message: string,
    /** The upstream's HTTP status (kind `status`). */
    readonly status: number | null = null,
    /** The upstream's own error message, cut short. */
    readonly upstreamMessage: string | null = null,
    /** The upstream's error code or type (OpenAI's `error.code`), when it gave one. */
    readonly upstreamCode: string | null = null,
    /** The request parameter the upstream's error names (OpenAI's `error.param`), when it gave one. */
    readonly upstreamParam: string | null = null,
    /** The parameters of the refused request that come from the client's request. */
    readonly clientParams: readonly string[] = [],
  ) {
    super(message);
    this.name = 'UpstreamFailure';
  }

  /** Worth another attempt on the same upstream: it may have been restarting. */
  get retryable(): boolean {
    return this.kind === 'connection' || (this.status !== null && [502, 503, 504].includes(this.status));
  }

  /**
   * The client's input is what the upstream refused: the prompt is over its context (400 or 422
   * saying so), over its body limit (413), or a 400/422 that is a validation error or names a
   * parameter the client sent (`max_tokens`, `temperature`, `top_p`, `stop`, `messages`…) without
   * saying the upstream does not support it. Another upstream would refuse it too, so this is the
   * client's error. Anything else the upstream refuses (404 for a model name it does not know, a
   * parameter it does not support, 401/403 for the agent's token) is the upstream's or the agent's
   * configuration, not the client's: the call falls back, and fails with 502 when every one failed.
   */
  get inputRefused(): 'context' | 'too_large' | 'invalid' | null {
    if (this.kind !== 'status' || this.status === null) return null;
    if (this.status === 413) return 'too_large';
    if (this.status !== 400 && this.status !== 422) return null;
    const said = `${this.upstreamCode ?? ''} ${this.upstreamMessage ?? ''}`;
    if (CONTEXT_OVERFLOW.test(said)) return 'context';
    if (UNSUPPORTED.test(said)) return null;
    if (VALIDATION.test(said) || this.refusedParam !== null) return 'invalid';
    return null;
  }

  /** The client's parameter the upstream's refusal names (its `param`, or one its message names). */
  get refusedParam(): string | null {
    if (this.upstreamParam !== null && this.clientParams.includes(this.upstreamParam))
      return this.upstreamParam;
    // The parameter names are words (`max_tokens`): one the message names is one of its words.
    const words = new Set((this.upstreamMessage ?? '').match(/\w+/g));
    return this.clientParams.find((p) => words.has(p)) ?? null;
  }

  /**
   * The upstream itself works but refused this particular request (400, 422): no reason to keep
   * other calls away from it.
   */
  get requestSpecific(): boolean {
    return this.kind === 'status' && (this.status === 400 || this.status === 422);
  }
}

export type ProbeState = 'up' | 'not_ready' | 'down' | 'unauthorized';

export interface ProbeResult {
  readonly state: ProbeState;
  readonly models: readonly string[];
  readonly detail: string | null;
  readonly latencyMs: number;
}

export interface UpstreamCompletion {
  readonly text: string;
  readonly upstreamModel: string;
  readonly finishReason: string;
  readonly usage: LlmUsage;
}

/** A streamed completion after its first fragment arrived. */
export interface UpstreamStream {
  readonly upstreamModel: string;
  /** The first fragment (already read) and the rest; ends when the upstream sends [DONE]. */
  readonly fragments: AsyncGenerator<string, void, undefined>;
  readonly finishReason: () => string;
  readonly usage: () => LlmUsage;
}

export interface UpstreamClientOptions {
  readonly id: UpstreamId;
  readonly baseUrl: string;
  readonly token?: string | undefined;
}

const ZERO_USAGE: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

export class UpstreamClient {
  readonly id: UpstreamId;
  readonly baseUrl: string;
  /** The URL without credentials or query, for messages and logs. */
  readonly displayUrl: string;
  private readonly headers: Record<string, string>;

  constructor(options: UpstreamClientOptions) {
    this.id = options.id;
    this.baseUrl = withoutTrailingSlashes(options.baseUrl).replace(/\/v1$/, '');
    this.displayUrl = loggableUrl(this.baseUrl).replace(/\/\/[^@/]*@/, '//');
    this.headers = {
      accept: 'application/json',
      'content-type': 'application/json',
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
    };
  }

  async complete(
    call: LlmCall,
    model: string,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<UpstreamCompletion> {
    const deadline = new Deadline(signal, timeoutMs);
    const body = requestBody(call, model, false);
    let text: string;
    let status: number;
    try {
      const res = await send(`${this.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify(body),
        signal: deadline.signal,
      });
      status = res.statusCode ?? 0;
      text = await readText(res);
    } catch (error) {
      throw this.fetchFailure(error, signal, deadline.expired, timeoutMs);
    } finally {
      deadline.clear();
    }
    if (status < 200 || status >= 300) throw this.statusFailure(status, text, body);
    return parseCompletion(text, model, (m) => new UpstreamFailure(this.id, 'bad_response', this.say(m)));
  }

  /**
   * Starts a streamed completion and waits for its first text fragment (or its end), so that a
   * failure before anything reached the client can still fall over to another upstream.
   */
  async stream(
    call: LlmCall,
    model: string,
    signal: AbortSignal,
    firstByteMs: number,
  ): Promise<UpstreamStream> {
    // Until the first fragment the first-byte deadline applies (headers included); then the same
    // time as an idle deadline between fragments, besides the caller's signal (the request's
    // deadline, the client leaving).
    const deadline = new Deadline(signal, firstByteMs);
    const body = requestBody(call, model, true);
    let res: IncomingMessage;
    try {
      res = await send(`${this.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...this.headers, accept: 'text/event-stream' },
        body: JSON.stringify(body),
        signal: deadline.signal,
      });
    } catch (error) {
      deadline.clear();
      throw this.fetchFailure(error, signal, deadline.expired, firstByteMs);
    }
    if (!isOk(res)) {
      const text = await readText(res).catch(() => '');
      deadline.clear();
      throw this.statusFailure(res.statusCode ?? 0, text, body);
    }
    let finishReason = 'unknown';
    let usage: LlmUsage = ZERO_USAGE;
    let upstreamModel = model;
    const events = sseData(res);
    const fail = (m: string) => new UpstreamFailure(this.id, 'bad_response', this.say(m));
    // Fragments from the parsed events; `finish_reason` and `usage` are picked up on the way.
    const texts = async function* (): AsyncGenerator<string, void, undefined> {
      for await (const data of events) {
        if (data === '[DONE]') return;
        let chunk: StreamChunk;
        try {
          chunk = JSON.parse(data) as StreamChunk;
        } catch {
          throw fail('sent a stream event that is not JSON');
        }
        if (chunk.error !== undefined)
          throw fail(`ended the stream with an error: ${errorText(chunk.error)}`);
        if (typeof chunk.model === 'string') upstreamModel = chunk.model;
        if (chunk.usage != null) usage = toUsage(chunk.usage);
        const choice = chunk.choices?.[0];
        if (typeof choice?.finish_reason === 'string') finishReason = choice.finish_reason;
        const content = choice?.delta?.content;
        if (typeof content === 'string' && content !== '') yield content;
      }
    };
    const iterator = texts();
    // Wait for the first fragment, still under the first-byte deadline.
    let first: IteratorResult<string, void>;
    try {
      first = await iterator.next();
    } catch (error) {
      deadline.abort();
      throw error instanceof UpstreamFailure
        ? error
        : this.fetchFailure(error, signal, deadline.expired, firstByteMs);
    }
    deadline.clearTimer();
    const broke = (error: unknown): Error =>
      this.midStreamFailure(error, signal, deadline.expired, firstByteMs);
    const fragments = (async function* () {
      try {
        if (first.done === true) return;
        yield first.value;
        for (;;) {
          // The idle deadline: re-armed for every fragment, and running only while the upstream is
          // awaited (not while a slow client takes the last one).
          deadline.arm(firstByteMs);
          let next: IteratorResult<string, void>;
          try {
            next = await iterator.next();
          } catch (error) {
            throw broke(error);
          } finally {
            deadline.clearTimer();
          }
          if (next.done === true) return;
          yield next.value;
        }
      } finally {
        // Ended, broken out of, or failed: stop the upstream's generation.
        deadline.abort();
        await iterator.return(undefined).catch(() => undefined);
      }
    })();
    return {
      get upstreamModel() {
        return upstreamModel;
      },
      fragments,
      finishReason: () => finishReason,
      usage: () => usage,
    };
  }

  /** `/health` (the suite's LLM), then `/v1/models` (any OpenAI-compatible server). */
  async probe(signal: AbortSignal): Promise<ProbeResult> {
    const started = performance.now();
    const result = (
      state: ProbeState,
      detail: string | null,
      models: readonly string[] = [],
    ): ProbeResult => ({
      state,
      models,
      detail,
      latencyMs: Math.round((performance.now() - started) * 10) / 10,
    });
    try {
      const health = await fetch(`${this.baseUrl}/health`, { headers: this.headers, signal });
      const text = await health.text();
      if (health.status === 401 || health.status === 403)
        return result(
          'unauthorized',
          this.say(`refused the token (${health.status}): set API_TOKEN to its token`),
        );
      if (health.status === 503)
        return result('not_ready', this.say(`is not ready: ${upstreamMessage(text) ?? 'starting'}`));
      if (!health.ok && health.status !== 404)
        return result('down', this.say(`answered /health with ${health.status}`));
      const models = await fetch(`${this.baseUrl}/v1/models`, { headers: this.headers, signal });
      const listing = await models.text();
      if (models.status === 401 || models.status === 403)
        return result(
          'unauthorized',
          this.say(`refused the token (${models.status}): set API_TOKEN to its token`),
        );
      if (!models.ok) return result('down', this.say(`answered /v1/models with ${models.status}`));
      return result('up', null, modelIds(listing));
    } catch (error) {
      return result('down', this.say(`is unreachable (${errorCause(error)})`));
    }
  }

  /** "The LLM upstream alpha4_service at http://… <what>". */
  say(what: string): string {
    return `The LLM upstream ${this.id} at ${this.displayUrl} ${what}`;
  }

  private fetchFailure(error: unknown, signal: AbortSignal, timedOut: boolean, ms: number): Error {
    if (signal.aborted) return signal.reason instanceof Error ? signal.reason : new Error('aborted');
    if (error instanceof UpstreamFailure) return error;
    if (timedOut) return new UpstreamFailure(this.id, 'timeout', this.say(`did not answer within ${ms} ms`));
    return new UpstreamFailure(this.id, 'connection', this.say(`is unreachable (${errorCause(error)})`));
  }

  /** A stream that broke after its first fragment (too late to fall back: the reply ends). */
  private midStreamFailure(error: unknown, signal: AbortSignal, idle: boolean, ms: number): Error {
    if (signal.aborted) return signal.reason instanceof Error ? signal.reason : new Error('aborted');
    if (error instanceof UpstreamFailure) return error;
    if (idle)
      return new UpstreamFailure(
        this.id,
        'timeout',
        this.say(
          `sent nothing for ${ms} ms in the middle of its reply (AGENT_LLM_FIRST_BYTE_TIMEOUT_MS): the reply was cut short`,
        ),
      );
    return new UpstreamFailure(this.id, 'connection', this.say(`broke off its reply (${errorCause(error)})`));
  }

  private statusFailure(status: number, text: string, sent: Record<string, unknown>): UpstreamFailure {
    const error = errorBody(text);
    const said = error.message;
    return new UpstreamFailure(
      this.id,
      'status',
      this.say(`answered ${status}${said === null ? '' : `: ${said}`}`),
      status,
      said,
      error.code,
      error.param,
      CLIENT_PARAMS.filter((p) => sent[p] !== undefined),
    );
  }
}

function requestBody(call: LlmCall, model: string, stream: boolean): Record<string, unknown> {
  return {
    model,
    messages: call.messages,
    max_tokens: call.maxTokens,
    temperature: call.temperature,
    ...(call.topP === undefined ? {} : { top_p: call.topP }),
    ...(call.stop === undefined || call.stop.length === 0 ? {} : { stop: call.stop }),
    ...(call.seed === undefined ? {} : { seed: call.seed }),
    ...(call.jsonSchema === undefined
      ? {}
      : { response_format: { type: 'json_schema', json_schema: { ...call.jsonSchema, strict: true } } }),
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  };
}

interface StreamChunk {
  model?: unknown;
  choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown } | null;
  error?: unknown;
}

/** The `data:` payloads of an SSE body, one per event (multi-line data joined with newlines). */
async function* sseData(body: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const value of body) {
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = eventEnd(buffer)) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^(\r\n\r\n|\n\n|\r\r)/, '');
      const data = raw
        .split(/\r\n|\r|\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5));
      if (data.length > 0) yield data.join('\n');
    }
  }
}

/**
 * A call's abort signal: the caller's signal or a timer, whichever comes first. A plain timer and
 * one listener (cheaper than AbortSignal.timeout plus AbortSignal.any on every call).
 */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = (): void => this.controller.abort(this.caller.reason);
  expired = false;

  constructor(
    private readonly caller: AbortSignal,
    ms: number,
  ) {
    if (caller.aborted) this.controller.abort(caller.reason);
    else caller.addEventListener('abort', this.onAbort, { once: true });
    this.arm(ms);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** (Re)starts the timer: the call is aborted, `expired`, unless cleared within `ms`. */
  arm(ms: number): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort(new Error(`deadline of ${ms} ms`));
    }, ms);
  }

  /** Stops the timer; the caller's signal still aborts. */
  clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Stops the timer and forgets the caller's signal. */
  clear(): void {
    this.clearTimer();
    this.caller.removeEventListener('abort', this.onAbort);
  }

  /** Aborts the call now (and clears). */
  abort(): void {
    this.clear();
    this.controller.abort();
  }
}

function eventEnd(buffer: string): number {
  const candidates = ['\n\n', '\r\n\r\n', '\r\r'].map((s) => buffer.indexOf(s)).filter((i) => i >= 0);
  return candidates.length === 0 ? -1 : Math.min(...candidates);
}

function parseCompletion(text: string, model: string, fail: (m: string) => Error): UpstreamCompletion {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw fail('answered with something other than JSON');
  }
  const b = body as {
    model?: unknown;
    choices?: { message?: { content?: unknown }; finish_reason?: unknown }[];
    usage?: StreamChunk['usage'];
  };
  const choice = Array.isArray(b.choices) ? b.choices[0] : undefined;
  const content = choice?.message?.content;
  if (typeof content !== 'string') throw fail('answered without a message (choices[0].message.content)');
  return {
    text: content,
    upstreamModel: typeof b.model === 'string' ? b.model : model,
    finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : 'unknown',
    usage: b.usage == null ? ZERO_USAGE : toUsage(b.usage),
  };
}

function toUsage(u: NonNullable<StreamChunk['usage']>): LlmUsage {
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const promptTokens = n(u.prompt_tokens);
  const completionTokens = n(u.completion_tokens);
  return {
    promptTokens,
    completionTokens,
    totalTokens: n(u.total_tokens) || promptTokens + completionTokens,
  };
}

function errorText(error: unknown): string {
  const m = (error as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m.slice(0, 300) : 'unknown error';
}
