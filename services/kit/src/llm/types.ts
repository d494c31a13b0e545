/**
 * A chat-completion backend as the suite's services use it: the suite's text LLM, or any
 * OpenAI-compatible server, behind one interface (the client in client.ts implements it; domain
 * code depends on this interface only).
 */

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

/** OpenAI's `response_format` with a JSON schema: the suite's LLM turns it into a grammar. */
export interface JsonSchemaFormat {
  readonly name: string;
  readonly schema: Record<string, unknown>;
}

export interface CompletionRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly temperature: number;
  readonly maxTokens: number;
  readonly topP?: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
  /** Constrains the output to JSON matching the schema. */
  readonly jsonSchema?: JsonSchemaFormat;
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface CompletionResult {
  readonly text: string;
  readonly model: string;
  readonly finishReason: string;
  readonly usage: Usage;
  /** HTTP attempts made (1 when the first succeeded). */
  readonly attempts: number;
  /** Time spent in calls to the backend, retries and backoff included, in ms. */
  readonly llmMs: number;
}

/** One piece of a streamed completion. */
export type StreamEvent =
  | { readonly type: 'delta'; readonly text: string }
  | {
      readonly type: 'end';
      readonly model: string;
      readonly finishReason: string;
      /** Present when the backend reported it (`stream_options.include_usage`). */
      readonly usage: Usage | null;
    };

export interface ChatBackend {
  complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionResult>;
}

export interface StreamingChatBackend extends ChatBackend {
  /**
   * Streams the completion. Connection failures before the first event are retried like
   * `complete`; after it, a failure ends the iteration with an error. Aborting `signal` stops the
   * upstream generation (the request is cancelled).
   */
  stream(request: CompletionRequest, signal: AbortSignal): AsyncIterable<StreamEvent>;
}
