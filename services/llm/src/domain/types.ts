/** What the domain and the engine exchange: plain data, no node-llama-cpp types. */

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatTurn {
  readonly role: ChatRole;
  readonly text: string;
}

/** A JSON schema the output must follow, or `'any'` for any JSON object (`json_object`). */
export type OutputFormat =
  { readonly type: 'text' } | { readonly type: 'json'; readonly schema: 'any' | object };

export interface GenerationParams {
  readonly maxTokens: number;
  /** 0: greedy. */
  readonly temperature: number;
  readonly topP?: number;
  readonly seed?: number;
  readonly stop: readonly string[];
  readonly format: OutputFormat;
  readonly frequencyPenalty?: number;
  readonly presencePenalty?: number;
}

export type FinishReason = 'stop' | 'length';

export interface GenerationResult {
  readonly text: string;
  readonly completionTokens: number;
  readonly finishReason: FinishReason;
  /** Prompt tokens kept in the KV cache from an earlier request (not evaluated again). */
  readonly cachedPromptTokens: number;
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

export function usageOf(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}
