import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import {
  BadGatewayError,
  BadRequestError,
  GatewayTimeoutError,
  ServiceUnavailableError,
  errorCause,
} from '../errors.js';
import { HttpClient, type StatusFailure } from '../http-client/index.js';
import type { Logger } from '../logger.js';
import { loggableUrl } from '../logger.js';
import type { KitMetrics } from '../metrics.js';
import { withoutTrailingSlashes } from '../urls.js';
import type {
  CompletionRequest,
  CompletionResult,
  StreamEvent,
  StreamingChatBackend,
  Usage,
} from './types.js';

/**
 * The suite's text LLM over its OpenAI-compatible API, on the kit's HttpClient: `POST
 * /v1/chat/completions` (whole or streamed) plus `/health` and `/v1/models` for readiness. Our own
 * client rather than the `openai` SDK so the retry policy is exactly ours (a completion changes
 * nothing, so it is retried as safe: connection failures and 502/503/504, never after the client
 * went away, never a 429 or a 4xx) and every failure maps onto the kit's error catalogue with a
 * message that names the cause.
 */

export type ProbeResult =
  | { readonly state: 'up'; readonly models: readonly string[] }
  | { readonly state: 'not_ready' | 'unauthorized' | 'down'; readonly detail: string };

export interface LlmClientOptions {
  readonly baseUrl: string;
  readonly token?: string;
  /** The deadline of a call: its attempts and its whole answer (a stream's too). */
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  /** Called before each retry (metrics). */
  readonly onRetry?: (reason: string) => void;
  /** The upstream's name in the outbound metrics (default `llm`). */
  readonly name?: string;
  /** The service's metrics, where its outbound calls are counted. */
  readonly metrics?: KitMetrics | Registry | undefined;
  readonly logger?: Logger | undefined;
}

const RETRYABLE_STATUS = [502, 503, 504] as const;

export class LlmClient implements StreamingChatBackend {
  readonly baseUrl: string;
  /** The URL without credentials or query, for messages and logs. */
  readonly displayUrl: string;
  private readonly http: HttpClient;

  constructor(private readonly options: LlmClientOptions) {
    this.baseUrl = withoutTrailingSlashes(options.baseUrl).replace(/\/v1$/, '');
    this.displayUrl = loggableUrl(this.baseUrl).replace(/\/\/[^@/]*@/, '//');
    this.http = new HttpClient({
      name: options.name ?? 'llm',
      baseUrl: this.baseUrl,
      label: `The LLM at ${this.displayUrl}`,
      token: options.token,
      timeoutMs: options.timeoutMs,
      retry: {
        retries: options.retries,
        backoffMs: options.backoffMs,
        statuses: RETRYABLE_STATUS,
        ...(options.onRetry === undefined ? {} : { onRetry: options.onRetry }),
      },
      failures: {
        unreachable: (f) =>
          new ServiceUnavailableError(`The LLM at ${this.displayUrl} is unreachable (${f.cause})`, 5, {
            cause: f.error,
          }),
        timeout: (f) =>
          new GatewayTimeoutError(
            `The LLM at ${this.displayUrl} did not answer within ${this.options.timeoutMs} ms`,
            { cause: f.error },
          ),
        status: (f) => this.statusFailure(f),
        notJson: () =>
          new BadGatewayError(`The LLM at ${this.displayUrl} answered with something other than JSON`),
      },
      metrics: options.metrics,
      logger: options.logger,
    });
  }

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionResult> {
    const started = performance.now();
    const res = await this.http.request({
      method: 'POST',
      path: '/v1/chat/completions',
      json: requestBody(request, false),
      signal,
      safe: true,
    });
    if (!res.ok) throw this.http.statusError(res);
    return {
      ...parseCompletion(res.text, this.displayUrl),
      attempts: res.attempts,
      llmMs: performance.now() - started,
    };
  }

  /**
   * Streams the completion (`stream: true`, usage included). The request is retried like
   * `complete` until the LLM accepts it; once the stream is open, a failure ends it with an error.
   * `timeoutMs` bounds the whole stream. Aborting `signal` cancels the request, which stops the
   * LLM's generation.
   */
  async *stream(request: CompletionRequest, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const res = await this.http.send({
      method: 'POST',
      path: '/v1/chat/completions',
      json: requestBody(request, true),
      signal,
      safe: true,
    });
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      throw this.http.statusError({ status: res.status, headers: res.headers, text });
    }
    let model = request.model;
    let finishReason = 'unknown';
    let usage: Usage | null = null;
    // The LLM may close right after its last `data:` line: that event counts.
    const events = res.events({ dispatchAtEnd: true });
    try {
      for await (const { data } of events) {
        if (data.trim() === '[DONE]') {
          yield { type: 'end', model, finishReason, usage };
          return;
        }
        const event = parseChunk(data, this.displayUrl);
        if (event.model !== undefined) model = event.model;
        if (event.finishReason !== undefined) finishReason = event.finishReason;
        if (event.usage !== undefined) usage = event.usage;
        if (event.text !== '') yield { type: 'delta', text: event.text };
      }
    } finally {
      res.cancel();
    }
    throw new BadGatewayError(`The LLM at ${this.displayUrl} ended the stream without [DONE]`);
  }

  /** `/health` (the suite's LLM), else `/v1/models` (any OpenAI-compatible server). */
  async probe(signal: AbortSignal): Promise<ProbeResult> {
    try {
      // Only the caller's signal bounds a probe.
      const health = await this.http.request({ path: '/health', signal, timeoutMs: Infinity, retries: 0 });
      if (health.status === 401 || health.status === 403)
        return { state: 'unauthorized', detail: this.unauthorizedMessage(health.status) };
      if (health.status === 503) {
        return {
          state: 'not_ready',
          detail: `the LLM at ${this.displayUrl} is not ready: ${upstreamMessage(health.text) ?? 'starting'}`,
        };
      }
      if (!health.ok && health.status !== 404) {
        return {
          state: 'down',
          detail: `the LLM at ${this.displayUrl} answered /health with ${health.status}`,
        };
      }
      const models = await this.http.request({ path: '/v1/models', signal, timeoutMs: Infinity, retries: 0 });
      if (models.status === 401 || models.status === 403)
        return { state: 'unauthorized', detail: this.unauthorizedMessage(models.status) };
      if (!models.ok) {
        return {
          state: 'down',
          detail: `the LLM at ${this.displayUrl} answered /v1/models with ${models.status}`,
        };
      }
      return { state: 'up', models: modelIds(models.text) };
    } catch (error) {
      // A mapped failure keeps the network's error as its cause: its code is the reason.
      return { state: 'down', detail: `the LLM at ${this.displayUrl} is unreachable (${errorCause(error)})` };
    }
  }

  private unauthorizedMessage(status: number): string {
    return `the LLM at ${this.displayUrl} refused the token (${status}): set API_TOKEN to the LLM's token`;
  }

  private statusFailure(f: StatusFailure): Error {
    const said = upstreamMessage(f.text);
    const detail = said === undefined ? '' : `: ${said}`;
    if (f.status === 401 || f.status === 403)
      return new BadGatewayError(capitalize(this.unauthorizedMessage(f.status)));
    // The caller's text (with the prompt around it) is longer than the model's context: the
    // client's to shorten, not a failure of the LLM.
    if (f.status >= 400 && f.status < 500 && contextOverflow(f.text)) {
      return new BadRequestError(`The text does not fit the LLM's context${detail}`, {
        code: 'context_length_exceeded',
      });
    }
    if (f.status === 429) {
      const after = Number(f.headers['retry-after'] ?? '5');
      return new ServiceUnavailableError(
        `The LLM at ${this.displayUrl} is busy (429)${detail}`,
        Number.isFinite(after) ? after : 5,
      );
    }
    if (f.status === 503)
      return new ServiceUnavailableError(`The LLM at ${this.displayUrl} is not available (503)${detail}`);
    if (f.status === 502 || f.status === 504)
      return new BadGatewayError(`The LLM at ${this.displayUrl} failed (${f.status})${detail}`);
    return new BadGatewayError(`The LLM at ${this.displayUrl} refused the request (${f.status})${detail}`);
  }
}

function requestBody(request: CompletionRequest, stream: boolean): Record<string, unknown> {
  return {
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
  };
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
