import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BadGatewayError,
  BadRequestError,
  GatewayTimeoutError,
  ServiceUnavailableError,
  errorCause,
} from '../errors.js';
import { loggableUrl } from '../logger.js';
import { withoutTrailingSlashes } from '../urls.js';
import type {
  CompletionRequest,
  CompletionResult,
  StreamEvent,
  StreamingChatBackend,
  Usage,
} from './types.js';

/**
 * The suite's text LLM over its OpenAI-compatible API, with Node's fetch: `POST
 * /v1/chat/completions` (whole or streamed) plus `/health` and `/v1/models` for readiness. Plain
 * fetch rather than the `openai` SDK so the retry policy is exactly ours (retry only connection
 * failures and 502/503/504, never after the client went away, never a 429 or a 4xx) and every
 * failure maps onto the kit's error catalogue with a message that names the cause.
 */

export type ProbeResult =
  | { readonly state: 'up'; readonly models: readonly string[] }
  | { readonly state: 'not_ready' | 'unauthorized' | 'down'; readonly detail: string };

export interface LlmClientOptions {
  readonly baseUrl: string;
  readonly token?: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  /** Called before each retry (metrics). */
  readonly onRetry?: (reason: string) => void;
}

const RETRYABLE_STATUS = new Set([502, 503, 504]);

class RetryableFailure extends Error {
  constructor(
    readonly final: Error,
    readonly reason: string,
  ) {
    super(final.message);
  }
}

export class LlmClient implements StreamingChatBackend {
  readonly baseUrl: string;
  /** The URL without credentials or query, for messages and logs. */
  readonly displayUrl: string;

  constructor(private readonly options: LlmClientOptions) {
    this.baseUrl = withoutTrailingSlashes(options.baseUrl).replace(/\/v1$/, '');
    this.displayUrl = loggableUrl(this.baseUrl).replace(/\/\/[^@/]*@/, '//');
  }

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionResult> {
    const started = performance.now();
    const body = requestBody(request, false);
    const { result, attempts } = await this.withRetries(signal, async () => {
      const timeout = AbortSignal.timeout(this.options.timeoutMs);
      const res = await this.post(body, signal, timeout);
      let text: string;
      try {
        text = await res.text();
      } catch (error) {
        throw this.fetchFailure(error, signal, timeout);
      }
      if (!res.ok) throw this.statusFailure(res, text);
      return parseCompletion(text, this.displayUrl);
    });
    return { ...result, attempts, llmMs: performance.now() - started };
  }

  /**
   * Streams the completion (`stream: true`, usage included). The request is retried like
   * `complete` until the LLM accepts it; once the stream is open, a failure ends it with an error.
   * `timeoutMs` bounds the whole stream. Aborting `signal` cancels the request, which stops the
   * LLM's generation.
   */
  async *stream(request: CompletionRequest, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const body = requestBody(request, true);
    const { result: res } = await this.withRetries(signal, async () => {
      const r = await this.post(body, signal, timeout);
      if (!r.ok) throw this.statusFailure(r, await r.text().catch(() => ''));
      return r;
    });
    if (res.body === null) throw new BadGatewayError(`The LLM at ${this.displayUrl} sent no stream`);
    let model = request.model;
    let finishReason = 'unknown';
    let usage: Usage | null = null;
    let buffered = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).replace(/\r$/, '');
          buffered = buffered.slice(newline + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') {
            yield { type: 'end', model, finishReason, usage };
            return;
          }
          const event = parseChunk(data, this.displayUrl);
          if (event.model !== undefined) model = event.model;
          if (event.finishReason !== undefined) finishReason = event.finishReason;
          if (event.usage !== undefined) usage = event.usage;
          if (event.text !== '') yield { type: 'delta', text: event.text };
        }
      }
    } catch (error) {
      if (error instanceof BadGatewayError) throw error;
      throw unwrapRetryable(this.fetchFailure(error, signal, timeout));
    }
    throw new BadGatewayError(`The LLM at ${this.displayUrl} ended the stream without [DONE]`);
  }

  private async withRetries<T>(
    signal: AbortSignal,
    attempt: () => Promise<T>,
  ): Promise<{ result: T; attempts: number }> {
    for (let n = 1; ; n++) {
      try {
        return { result: await attempt(), attempts: n };
      } catch (error) {
        if (!(error instanceof RetryableFailure)) throw error;
        if (n > this.options.retries) throw error.final;
        this.options.onRetry?.(error.reason);
        const backoff = this.options.backoffMs * 2 ** (n - 1);
        // Full jitter on half the backoff, so replicas retrying together spread out.
        await sleep(backoff / 2 + Math.random() * (backoff / 2), undefined, { signal }).catch(() => {
          throw signal.reason as Error;
        });
      }
    }
  }

  private async post(body: string, signal: AbortSignal, timeout: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: this.headers({ 'content-type': 'application/json' }),
        body,
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      throw this.fetchFailure(error, signal, timeout);
    }
  }

  /** `/health` (the suite's LLM), else `/v1/models` (any OpenAI-compatible server). */
  async probe(signal: AbortSignal): Promise<ProbeResult> {
    try {
      const health = await fetch(`${this.baseUrl}/health`, { headers: this.headers(), signal });
      const text = await health.text();
      if (health.status === 401 || health.status === 403)
        return { state: 'unauthorized', detail: this.unauthorizedMessage(health.status) };
      if (health.status === 503) {
        return {
          state: 'not_ready',
          detail: `the LLM at ${this.displayUrl} is not ready: ${upstreamMessage(text) ?? 'starting'}`,
        };
      }
      if (!health.ok && health.status !== 404) {
        return {
          state: 'down',
          detail: `the LLM at ${this.displayUrl} answered /health with ${health.status}`,
        };
      }
      const models = await fetch(`${this.baseUrl}/v1/models`, { headers: this.headers(), signal });
      const listing = await models.text();
      if (models.status === 401 || models.status === 403)
        return { state: 'unauthorized', detail: this.unauthorizedMessage(models.status) };
      if (!models.ok) {
        return {
          state: 'down',
          detail: `the LLM at ${this.displayUrl} answered /v1/models with ${models.status}`,
        };
      }
      return { state: 'up', models: modelIds(listing) };
    } catch (error) {
      return { state: 'down', detail: `the LLM at ${this.displayUrl} is unreachable (${errorCause(error)})` };
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      accept: 'application/json',
      ...(this.options.token === undefined ? {} : { authorization: `Bearer ${this.options.token}` }),
      ...extra,
    };
  }

  private unauthorizedMessage(status: number): string {
    return `the LLM at ${this.displayUrl} refused the token (${status}): set API_TOKEN to the LLM's token`;
  }

  private fetchFailure(error: unknown, signal: AbortSignal, timeout: AbortSignal): Error {
    if (signal.aborted) return signal.reason as Error;
    if (timeout.aborted) {
      return new GatewayTimeoutError(
        `The LLM at ${this.displayUrl} did not answer within ${this.options.timeoutMs} ms`,
      );
    }
    const cause = errorCause(error);
    return new RetryableFailure(
      new ServiceUnavailableError(`The LLM at ${this.displayUrl} is unreachable (${cause})`),
      'connection',
    );
  }

  private statusFailure(res: Response, text: string): Error {
    const said = upstreamMessage(text);
    const detail = said === undefined ? '' : `: ${said}`;
    if (res.status === 401 || res.status === 403)
      return new BadGatewayError(capitalize(this.unauthorizedMessage(res.status)));
    // The caller's text (with the prompt around it) is longer than the model's context: the
    // client's to shorten, not a failure of the LLM.
    if (res.status >= 400 && res.status < 500 && contextOverflow(text)) {
      return new BadRequestError(`The text does not fit the LLM's context${detail}`, {
        code: 'context_length_exceeded',
      });
    }
    if (res.status === 429) {
      const after = Number(res.headers.get('retry-after') ?? '5');
      return new ServiceUnavailableError(
        `The LLM at ${this.displayUrl} is busy (429)${detail}`,
        Number.isFinite(after) ? after : 5,
      );
    }
    if (RETRYABLE_STATUS.has(res.status)) {
      const final =
        res.status === 503
          ? new ServiceUnavailableError(`The LLM at ${this.displayUrl} is not available (503)${detail}`)
          : new BadGatewayError(`The LLM at ${this.displayUrl} failed (${res.status})${detail}`);
      return new RetryableFailure(final, `status_${res.status}`);
    }
    return new BadGatewayError(`The LLM at ${this.displayUrl} refused the request (${res.status})${detail}`);
  }
}

function requestBody(request: CompletionRequest, stream: boolean): string {
  return JSON.stringify({
    model: request.model,
    messages: request.messages,
    temperature: request.temperature,
    max_tokens: request.maxTokens,
    ...(request.topP === undefined ? {} : { top_p: request.topP }),
    ...(request.stop === undefined || request.stop.length === 0 ? {} : { stop: request.stop }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(request.jsonSchema === undefined
      ? {}
      : { response_format: { type: 'json_schema', json_schema: request.jsonSchema } }),
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
}

function unwrapRetryable(error: Error): Error {
  return error instanceof RetryableFailure ? error.final : error;
}

interface ChunkEvent {
  readonly text: string;
  readonly model?: string;
  readonly finishReason?: string;
  readonly usage?: Usage;
}

function parseChunk(data: string, url: string): ChunkEvent {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    throw new BadGatewayError(`The LLM at ${url} streamed something other than JSON`);
  }
  const b = body as {
    model?: unknown;
    error?: { message?: unknown };
    choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[];
    usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  };
  if (b.error !== undefined) {
    const said = typeof b.error.message === 'string' ? `: ${b.error.message.slice(0, 300)}` : '';
    throw new BadGatewayError(`The LLM at ${url} failed during the stream${said}`);
  }
  const choice = Array.isArray(b.choices) ? b.choices[0] : undefined;
  const content = choice?.delta?.content;
  const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    text: typeof content === 'string' ? content : '',
    ...(typeof b.model === 'string' ? { model: b.model } : {}),
    ...(typeof choice?.finish_reason === 'string' ? { finishReason: choice.finish_reason } : {}),
    ...(b.usage === undefined || b.usage === null
      ? {}
      : {
          usage: {
            promptTokens: count(b.usage.prompt_tokens),
            completionTokens: count(b.usage.completion_tokens),
          },
        }),
  };
}

function parseCompletion(text: string, url: string): Omit<CompletionResult, 'attempts' | 'llmMs'> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadGatewayError(`The LLM at ${url} answered with something other than JSON`);
  }
  const b = body as {
    model?: unknown;
    choices?: { message?: { content?: unknown }; finish_reason?: unknown }[];
    usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
  };
  const choice = Array.isArray(b.choices) ? b.choices[0] : undefined;
  const content = choice?.message?.content;
  if (typeof content !== 'string')
    throw new BadGatewayError(`The LLM at ${url} answered without a message (choices[0].message.content)`);
  const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    text: content,
    model: typeof b.model === 'string' ? b.model : 'unknown',
    finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : 'unknown',
    usage: {
      promptTokens: count(b.usage?.prompt_tokens),
      completionTokens: count(b.usage?.completion_tokens),
    },
  };
}

/** The message of an OpenAI `{error:{message}}`, a `{detail}` or a `{reason}` body, cut short. */
export function upstreamMessage(text: string): string | undefined {
  try {
    const b = JSON.parse(text) as { error?: { message?: unknown }; detail?: unknown; reason?: unknown };
    const m =
      typeof b.error?.message === 'string'
        ? b.error.message
        : typeof b.detail === 'string'
          ? b.detail
          : typeof b.reason === 'string'
            ? b.reason
            : undefined;
    return m?.slice(0, 300);
  } catch {
    return undefined;
  }
}

/**
 * Whether an upstream error body says the prompt does not fit the context: OpenAI's and this
 * suite's LLM `context_length_exceeded` code or wording, llama.cpp server's `exceed_context_size`.
 */
export function contextOverflow(text: string): boolean {
  let code: unknown;
  try {
    code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
  } catch {
    // not JSON: the wording decides
  }
  if (code === 'context_length_exceeded' || code === 'exceed_context_size_error') return true;
  const said = (upstreamMessage(text) ?? '').toLowerCase();
  return said.includes('maximum context length') || said.includes('exceeds the available context size');
}

/** The model ids of an OpenAI `/v1/models` listing (none when it is not one). */
export function modelIds(text: string): string[] {
  try {
    const b = JSON.parse(text) as { data?: { id?: unknown }[] };
    return (b.data ?? []).flatMap((m) => (typeof m.id === 'string' ? [m.id] : []));
  } catch {
    return [];
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
