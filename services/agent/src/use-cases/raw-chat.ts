import { performance } from 'node:perf_hooks';
import type { ChatMessage, UpstreamId } from '../domain/types.js';
import { withSystem } from './chat-completion.js';
import type { Call, UseCaseDeps } from './ports.js';
import { usageBody } from './turn.js';

/** `/chat/raw`: messages straight to an LLM, with an optional system override; no session. */

export interface RawChatInput {
  readonly messages: readonly ChatMessage[];
  readonly system: string | null;
  readonly prefer: UpstreamId | null;
  readonly maxTokens: number;
  readonly temperature: number;
}

export function rawChatUseCase(deps: Pick<UseCaseDeps, 'router' | 'metrics'>) {
  return async (input: RawChatInput, call: Pick<Call, 'signal' | 'since'>) => {
    deps.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
    const result = await deps.router.complete(
      {
        messages: withSystem(input.messages, input.system),
        maxTokens: input.maxTokens,
        temperature: input.temperature,
        intent: 'chat',
        prefer: input.prefer,
      },
      call.signal,
    );
    const total = performance.now() - call.since;
    deps.metrics.overhead.observe(Math.max(0, total - result.llmMs) / 1000);
    return {
      response: result.text,
      model: result.model,
      upstream_model: result.upstreamModel,
      finish_reason: result.finishReason,
      usage: usageBody(result.usage),
      fell_back_from: [...result.fellBackFrom],
      processing_time_ms: Math.round(total),
    };
  };
}
