import type { ChatCompletion, ChatCompletionChunk } from '../schemas/chat-completions.js';
import type { FinishReason, Usage } from './types.js';

/** Response bodies of `/v1/chat/completions`, as OpenAI shapes them. */

export const SYSTEM_FINGERPRINT = 'clinicalsuite-llm';

export interface CompletionMeta {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly model: string;
}

/** `chatcmpl-` and 24 characters from a random UUID (the caller supplies it). */
export function completionId(uuid: string): string {
  return `chatcmpl-${uuid.replace(/-/g, '').slice(0, 24)}`;
}

export function chatCompletion(
  meta: CompletionMeta,
  text: string,
  finishReason: FinishReason,
  usage: Usage,
): ChatCompletion {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage,
  };
}

type Delta = ChatCompletionChunk['choices'][number]['delta'];

/** One streamed chunk; with `include_usage`, every chunk carries `usage: null` but the last. */
export function chunk(
  meta: CompletionMeta,
  delta: Delta,
  finishReason: FinishReason | null,
  includeUsage: boolean,
): ChatCompletionChunk {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** The extra last chunk of `stream_options.include_usage`: no choices, the usage. */
export function usageChunk(meta: CompletionMeta, usage: Usage): ChatCompletionChunk {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [],
    usage,
  };
}
