import { performance } from 'node:perf_hooks';
import {
  HttpClient,
  errorCause,
  loggableUrl,
  withoutTrailingSlashes,
  type FailureMapping,
  type KitMetrics,
  type OutboundResponse,
} from '@clinicalsuite/kit';
import type { Registry } from 'prom-client';
import type { LlmCall, LlmUsage, ProbeState, UpstreamId } from '../domain/types.js';

export type { ProbeState };
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
 * non-streamed completion, a streamed one read from its SSE, and a health probe, on the kit's
 * HttpClient (its keep-alive pool, deadlines and event-stream parser) rather than the `openai` SDK:
 * the retry and fallback policy is the router's (upstream-pool.ts), so the client retries nothing,
 * and every failure comes back as an `UpstreamFailure` saying whether another attempt could help.
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
  /** The agent's metrics registry, where the calls are counted under the upstream's id. */
  readonly metrics?: KitMetrics | Registry | undefined;
}

const ZERO_USAGE: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

export class UpstreamClient {
  readonly id: UpstreamId;
  readonly baseUrl: string;
  /** The URL without credentials or query, for messages and logs. */
  readonly displayUrl: string;
  private readonly http: HttpClient;

  constructor(options: UpstreamClientOptions) {
    this.id = options.id;
    this.baseUrl = withoutTrailingSlashes(options.baseUrl).replace(/\/v1$/, '');
    this.displayUrl = loggableUrl(this.baseUrl).replace(/\/\/[^@/]*@/, '//');
    this.http = new HttpClient({
      name: options.id,
      baseUrl: this.baseUrl,
      label: `The LLM upstream ${options.id} at ${this.displayUrl}`,
      token: options.token,
      timeoutMs: Infinity,
      failures: this.failures(false),
      metrics: options.metrics,
    });
  }

  async complete(
    call: LlmCall,
    model: string,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<UpstreamCompletion> {
    const body = requestBody(call, model, false);
    const res = await this.http.request({
      method: 'POST',
      path: '/v1/chat/completions',
      json: body,
      signal,
      timeoutMs,
    });
    if (!res.ok) throw this.statusFailure(res.status, this.http.redact(res.text), body);
    return parseCompletion(res.text, model, (m) => new UpstreamFailure(this.id, 'bad_response', this.say(m)));
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
    let midStream = false;
    const body = requestBody(call, model, true);
    const res: OutboundResponse = await this.http.send({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { accept: 'text/event-stream' },
      json: body,
      signal,
      timeoutMs: firstByteMs,
      failures: this.failures(() => midStream),
    });
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      throw this.statusFailure(res.status, this.http.redact(text), body);
    }
    let finishReason = 'unknown';
    let usage: LlmUsage = ZERO_USAGE;
    let upstreamModel = model;
    const events = res.events();
    const fail = (m: string) => new UpstreamFailure(this.id, 'bad_response', this.say(m));
    // Fragments from the parsed events; `finish_reason` and `usage` are picked up on the way.
    const texts = async function* (): AsyncGenerator<string, void, undefined> {
      for await (const { data } of events) {
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
      res.cancel();
      throw error;
    }
    res.deadline.pause();
    midStream = true;
    const fragments = (async function* () {
      try {
        if (first.done === true) return;
        yield first.value;
        for (;;) {
          // The idle deadline: re-armed for every fragment, and running only while the upstream is
          // awaited (not while a slow client takes the last one).
          res.deadline.arm(firstByteMs);
          let next: IteratorResult<string, void>;
          try {
            next = await iterator.next();
          } finally {
            res.deadline.pause();
          }
          if (next.done === true) return;
          yield next.value;
        }
      } finally {
        // Ended, broken out of, or failed: stop the upstream's generation.
        res.cancel();
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
    // Only the caller's signal bounds a probe; the network's own reason is the detail.
    const failures: FailureMapping = { unreachable: (f) => new ProbeFailure(f.cause) };
    try {
      const health = await this.http.request({ path: '/health', signal, failures });
      if (health.status === 401 || health.status === 403)
        return result(
          'unauthorized',
          this.say(`refused the token (${health.status}): set API_TOKEN to its token`),
        );
      if (health.status === 503)
        return result('not_ready', this.say(`is not ready: ${upstreamMessage(health.text) ?? 'starting'}`));
      if (!health.ok && health.status !== 404)
        return result('down', this.say(`answered /health with ${health.status}`));
      const models = await this.http.request({ path: '/v1/models', signal, failures });
      if (models.status === 401 || models.status === 403)
        return result(
          'unauthorized',
          this.say(`refused the token (${models.status}): set API_TOKEN to its token`),
        );
      if (!models.ok) return result('down', this.say(`answered /v1/models with ${models.status}`));
      return result('up', null, modelIds(models.text));
    } catch (error) {
      const why = error instanceof ProbeFailure ? error.message : errorCause(error);
      return result('down', this.say(`is unreachable (${why})`));
    }
  }

  /** "The LLM upstream alpha4_service at http://… <what>". */
  say(what: string): string {
    return `The LLM upstream ${this.id} at ${this.displayUrl} ${what}`;
  }

  /**
   * A failure of the wire as an UpstreamFailure: before the first fragment, nothing answered or not
   * in time; after it (`midStream`), the stream broke off or went quiet, too late to fall back.
   */
  private failures(midStream: boolean | (() => boolean)): FailureMapping {
    const mid = typeof midStream === 'function' ? midStream : () => midStream;
    return {
      unreachable: (f) =>
        new UpstreamFailure(
          this.id,
          'connection',
          this.say(mid() ? `broke off its reply (${f.cause})` : `is unreachable (${f.cause})`),
        ),
      timeout: (f) =>
        new UpstreamFailure(
          this.id,
          'timeout',
          this.say(
            mid()
              ? `sent nothing for ${f.timeoutMs} ms in the middle of its reply (AGENT_LLM_FIRST_BYTE_TIMEOUT_MS): the reply was cut short`
              : `did not answer within ${f.timeoutMs} ms`,
          ),
        ),
    };
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

/** A probe's network failure, its reason as the message. */
class ProbeFailure extends Error {}

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
