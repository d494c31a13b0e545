import {
  BadGatewayError,
  BadRequestError,
  ClientClosedRequestError,
  InternalError,
  errorCause,
  type HttpError,
} from '@clinicalsuite/kit';

/**
 * llama-server's OpenAI-compatible API as the front uses it: `POST /v1/chat/completions`, always
 * streamed with usage (whole replies are gathered from the stream in routes/chat-completions.ts),
 * `/apply-template` and `/tokenize` to count a prompt's tokens before it is sent, `/health` for
 * readiness. Failures map onto the spec's codes: the backend unreachable or still loading → 502,
 * its own 400 (bad request) → 400, anything else it answers (a vision-component or out-of-memory
 * failure) → 500 with its message.
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

interface OpenAiError {
  readonly error?: { readonly message?: string; readonly type?: string; readonly code?: number | string };
}

export class BackendClient {
  constructor(readonly baseUrl: string) {}

  async health(timeoutMs = 2000): Promise<HealthState> {
    try {
      const res = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(timeoutMs) });
      const text = await res.text();
      if (res.ok) return { state: 'ok' };
      const message = parseError(text) ?? `HTTP ${res.status}`;
      return { state: res.status === 503 ? 'loading' : 'down', detail: message };
    } catch (error) {
      return { state: 'down', detail: errorCause(error) };
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
    const res = await this.post(
      '/v1/chat/completions',
      { ...request, stream: true, stream_options: { include_usage: true } },
      signal,
    );
    if (!res.ok) throw statusError(res.status, await res.text());
    if (res.body === null) throw new BadGatewayError('llama-server answered the stream without a body');
    let finishReason = 'stop';
    let usage: BackendUsage | null = null;
    let buffer = '';
    const decoder = new TextDecoder();
    try {
      for await (const bytes of res.body) {
        buffer += decoder.decode(bytes as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
          const data = event
            .split(/\r?\n/)
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
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
      }
    } catch (error) {
      throw this.failure(error, signal);
    }
    throw new BadGatewayError('llama-server ended the stream before [DONE] (the backend stopped)');
  }

  private async postJson(path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const res = await this.post(path, body, signal);
    let text: string;
    try {
      text = await res.text();
    } catch (error) {
      throw this.failure(error, signal);
    }
    if (!res.ok) throw statusError(res.status, text);
    try {
      return JSON.parse(text);
    } catch {
      throw new BadGatewayError(`llama-server answered ${path} with something other than JSON`);
    }
  }

  private async post(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      throw this.failure(error, signal);
    }
  }

  private failure(error: unknown, signal: AbortSignal): Error {
    if (signal.aborted)
      return signal.reason instanceof Error ? signal.reason : new ClientClosedRequestError();
    if (error instanceof Error && 'status' in error) return error;
    return new BadGatewayError(
      `Backend not ready or stopped: llama-server unreachable (${errorCause(error)})`,
      {
        cause: error,
      },
    );
  }
}

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
