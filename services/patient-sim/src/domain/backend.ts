import type { ChatMessage } from './prompt.js';

/** What plays the patient: a chat-completion backend (the LLM client implements it). */

export interface CompletionRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly temperature: number;
  readonly maxTokens: number;
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

export interface ChatBackend {
  complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionResult>;
}
