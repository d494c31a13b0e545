import {
  BadGatewayError,
  BadRequestError,
  ClientClosedRequestError,
  HttpClient,
  HttpError,
  InternalError,
  errorCause,
  type KitMetrics,
} from '@clinicalsuite/kit';
import type { Registry } from 'prom-client';

/**
 * llama-server's OpenAI-compatible API as the front uses it: `POST /v1/chat/completions`, always
 * streamed with usage (whole replies are gathered from the stream in routes/chat-completions.ts),
 * `/apply-template` and `/tokenize` to count a prompt's tokens before it is sent, `/health` for
 * readiness. Failures map onto the spec's codes: the backend unreachable or still loading → 502,
 * its own 400 (bad request) → 400, anything else it answers (a vision-component or out-of-memory
 * failure) → 500 with its message. Calls go through the kit's HttpClient, bounded by the caller's
 * signal only (a generation takes as long as it takes), never retried (a POST to a model server).
 */

export type BackendPart =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'image_url'; readonly image_url: { readonly url: string } };

export interface BackendMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string | readonly BackendPart[];
}

export interface BackendRequest {
  readonly model: string;
  readonly messages: readonly BackendMessage[];
  readonly temperature: number;
  readonly top_p: number;
  readonly max_tokens: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
}

export interface BackendUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export type BackendStreamEvent =
  | { readonly type: 'delta'; readonly text: string }
  | { readonly type: 'end'; readonly finishReason: string; readonly usage: BackendUsage | null };

export type HealthState =
  { readonly state: 'ok' } | { readonly state: 'loading' | 'down'; readonly detail: string };

export interface BackendClientOptions {
  /** The service's metrics, where the calls to llama-server are counted (`upstream="llama_server"`). */
  readonly metrics?: KitMetrics | Registry | undefined;
}

interface OpenAiError {
  readonly error?: { readonly message?: string; readonly type?: string; readonly code?: number | string };
}

export class BackendClient {
  private readonly http: HttpClient;

  constructor(
    readonly baseUrl: string,
    options: BackendClientOptions = {},
  ) {
    this.http = new HttpClient({
      name: 'llama_server',
      baseUrl,
      label: 'llama-server',
      timeoutMs: Infinity,
      headers: {},
      failures: {
        unreachable: (f) =>
          new BadGatewayError(`Backend not ready or stopped: llama-server unreachable (${f.cause})`, {
            cause: f.error,
          }),
        status: (f) => statusError(f.status, f.text),
        notJson: (path) =>
          new BadGatewayError(`llama-server answered ${path} with something other than JSON`),
      },
      metrics: options.metrics,
    });
  }

  async health(timeoutMs = 2000): Promise<HealthState> {
    try {
      const res = await this.http.request({
        path: '/health',
        timeoutMs,
        failures: {
          unreachable: (f) => new HealthFailure(f.cause),
          timeout: () => new HealthFailure('The operation was aborted due to timeout'),
        },
      });
      if (res.ok) return { state: 'ok' };
      const message = parseError(res.text) ?? `HTTP ${res.status}`;
      return { state: res.status === 503 ? 'loading' : 'down', detail: message };
    } catch (error) {
      return { state: 'down', detail: error instanceof HealthFailure ? error.message : errorCause(error) };
    }
  }

  /** The prompt's tokens as the backend's chat template and tokenizer make them (images not counted). */
  async countPromptTokens(messages: readonly BackendMessage[], signal: AbortSignal): Promise<number> {
    const template = (await this.postJson('/apply-template', { messages }, signal)) as { prompt?: unknown };
    if (typeof template.prompt !== 'string')
      throw new BadGatewayError('llama-server: /apply-template gave no prompt');
    const tokens = (await this.postJson(
      '/tokenize',
      { content: template.prompt, add_special: true, parse_special: true },
      signal,
    )) as { tokens?: unknown };
    if (!Array.isArray(tokens.tokens)) throw new BadGatewayError('llama-server: /tokenize gave no tokens');
    return tokens.tokens.length;
  }

  /** Streams the completion; aborting `signal` closes the connection, which stops llama-server's slot. */
  async *stream(request: BackendRequest, signal: AbortSignal): AsyncIterable<BackendStreamEvent> {
    const res = await this.http.send({
      method: 'POST',
      path: '/v1/chat/completions',
      json: { ...request, stream: true, stream_options: { include_usage: true } },
      signal,
    });
    if (!res.ok) throw statusError(res.status, await res.text());
    let finishReason = 'stop';
    let usage: BackendUsage | null = null;
    try {
      for await (const event of res.events()) {
        const data = event.data.trim();
        if (data === '') continue;
        if (data === '[DONE]') {
          yield { type: 'end', finishReason, usage };
          return;
        }
        const chunk = JSON.parse(data) as OpenAiError & {
          choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[];
          usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
        };
        if (chunk.error !== undefined) throw statusError(500, data);
        const choice = chunk.choices?.[0];
        const content = choice?.delta?.content;
        if (typeof content === 'string' && content !== '') yield { type: 'delta', text: content };
        if (typeof choice?.finish_reason === 'string') finishReason = choice.finish_reason;
        usage = usageOf(chunk.usage) ?? usage;
      }
    } catch (error) {
      throw this.failure(error, signal);
    } finally {
      res.cancel();
    }
    throw new BadGatewayError('llama-server ended the stream before [DONE] (the backend stopped)');
  }

  private async postJson(path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    return this.http.json({ method: 'POST', path, json: body, signal });
  }

  /** A failure while reading the stream: the caller's abort and catalogue errors as they are. */
  private failure(error: unknown, signal: AbortSignal): Error {
    if (signal.aborted)
      return signal.reason instanceof Error ? signal.reason : new ClientClosedRequestError();
    if (error instanceof HttpError) return error;
    return new BadGatewayError(
      `Backend not ready or stopped: llama-server unreachable (${errorCause(error)})`,
      { cause: error },
    );
  }
}

/** Why a health check failed, as its detail. */
class HealthFailure extends Error {}

function usageOf(
  u: { prompt_tokens?: unknown; completion_tokens?: unknown } | undefined,
): BackendUsage | null {
  if (u === undefined || typeof u.prompt_tokens !== 'number' || typeof u.completion_tokens !== 'number')
    return null;
  return { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens };
}

function parseError(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as OpenAiError;
    return typeof body.error?.message === 'string' ? body.error.message : undefined;
  } catch {
    return undefined;
  }
}

/** llama-server's answer as one of the spec's statuses. */
function statusError(status: number, text: string): HttpError {
  const message = parseError(text) ?? `HTTP ${status}`;
  if (status === 503 || status === 502 || status === 504) {
    return new BadGatewayError(`Backend not ready: llama-server answered ${status} (${message})`);
  }
  if (status === 400)
    return new BadRequestError(`The model refused the request: ${message}`, { code: 'backend_rejected' });
  return new InternalError(`Engine error: ${message}`);
}
