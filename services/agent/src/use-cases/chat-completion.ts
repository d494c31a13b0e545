import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ChunkStream } from '@clinicalsuite/kit/llm';
import type { ChatMessage, LlmCall, LlmResult, UpstreamId } from '../domain/types.js';
import type { Call, UseCaseDeps } from './ports.js';

/**
 * The OpenAI-compatible chat completion (`/v1/chat/completions`): the messages go to the LLM the
 * request names (tried first, the others as fallbacks) or the one the agent chooses, answered
 * whole or streamed. Stateless: no session. `system` replaces every system message.
 */

export interface ChatCompletionInput {
  readonly messages: readonly ChatMessage[];
  /** Replaces every system message; null: the messages as they are. */
  readonly system: string | null;
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP?: number | undefined;
  readonly stop?: readonly string[] | undefined;
  readonly seed?: number | undefined;
  /** The LLM named by `model`; null: the agent chooses. */
  readonly prefer: UpstreamId | null;
}

export interface Completion {
  readonly id: string;
  /** Epoch seconds. */
  readonly created: number;
  readonly result: LlmResult;
}

/** A streamed completion, as the kit's chunk stream renders it (the caller adds `includeUsage`). */
export type CompletionStream = Omit<ChunkStream, 'includeUsage'>;

export function chatCompletionUseCase(deps: Pick<UseCaseDeps, 'router' | 'metrics' | 'now'>) {
  const start = (input: ChatCompletionInput): { call: LlmCall; id: string; created: number } => {
    deps.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
    return {
      call: {
        messages: withSystem(input.messages, input.system),
        maxTokens: input.maxTokens,
        temperature: input.temperature,
        ...(input.topP === undefined ? {} : { topP: input.topP }),
        ...(input.stop === undefined ? {} : { stop: input.stop }),
        ...(input.seed === undefined ? {} : { seed: input.seed }),
        intent: 'chat',
        prefer: input.prefer,
      },
      id: `chatcmpl-${randomUUID().replace(/-/g, '')}`,
      created: Math.floor(deps.now() / 1000),
    };
  };
  return {
    complete: async (
      input: ChatCompletionInput,
      call: Pick<Call, 'signal' | 'since'>,
    ): Promise<Completion> => {
      const { call: llmCall, id, created } = start(input);
      const result = await deps.router.complete(llmCall, call.signal);
      deps.metrics.overhead.observe(Math.max(0, performance.now() - call.since - result.llmMs) / 1000);
      return { id, created, result };
    },
    /** Resolves once an upstream started the reply (rejects, before anything is sent, when none could). */
    stream: async (input: ChatCompletionInput, signal: AbortSignal): Promise<CompletionStream> => {
      const { call, id, created } = start(input);
      const stream = await deps.router.stream(call, signal);
      const open = deps.metrics.streamsOpen.labels({ transport: 'sse' });
      return {
        id,
        created,
        model: () => stream.model,
        fragments: (async function* () {
          open.inc();
          try {
            yield* stream;
          } finally {
            open.dec();
          }
        })(),
        end: () => ({ finishReason: stream.finishReason, usage: stream.usage }),
      };
    },
  };
}

/** `system` replaces every system message; otherwise the messages pass as they are. */
export function withSystem(messages: readonly ChatMessage[], system: string | null): ChatMessage[] {
  if (system === null) return [...messages];
  return [{ role: 'system', content: system }, ...messages.filter((m) => m.role !== 'system')];
}
