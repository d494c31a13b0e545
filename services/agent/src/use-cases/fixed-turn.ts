import type { IntentDecision } from '../domain/intent/index.js';
import type { LlmIntent } from '../domain/prompts.js';
import type { Language, UpstreamId } from '../domain/types.js';
import { llmTurnRequest } from './message.js';
import type { Call, Transport } from './ports.js';
import { streamTurn, type TurnEvent } from './streamed-turn.js';
import { completeTurn, type TurnDeps, type TurnReply, type TurnRequest } from './turn.js';

/**
 * A message whose intent the endpoint fixes (`/chat`, `/analyze`, `/code`, `/debug`): no detection,
 * one LLM turn, answered whole or streamed.
 */

export interface FixedTurnInput {
  readonly intent: LlmIntent;
  readonly text: string;
  readonly language: Language;
  readonly sessionId: string | null;
  readonly prefer: UpstreamId | null;
  /** Default: AGENT_MAX_TOKENS. */
  readonly maxTokens?: number | undefined;
  /** Default: AGENT_TEMPERATURE. */
  readonly temperature?: number | undefined;
}

export function fixedTurnUseCase(deps: TurnDeps) {
  const request = (input: FixedTurnInput): TurnRequest => {
    const decision: IntentDecision = { intent: input.intent, source: 'fixed', confidence: 1, matched: [] };
    return llmTurnRequest(
      deps,
      {
        text: input.text,
        language: input.language,
        sessionId: input.sessionId,
        force: input.intent,
        prefer: input.prefer,
      },
      input.intent,
      decision,
      { maxTokens: input.maxTokens, temperature: input.temperature },
    );
  };
  return {
    answer: (input: FixedTurnInput, call: Call): Promise<TurnReply> => {
      deps.metrics.intents.inc({ intent: input.intent, source: 'fixed' });
      return completeTurn(deps, request(input), call);
    },
    stream: (input: FixedTurnInput, call: Call, transport: Transport): AsyncIterable<TurnEvent> => {
      deps.metrics.intents.inc({ intent: input.intent, source: 'fixed' });
      return streamTurn(deps, request(input), call.signal, transport);
    },
  };
}

export type FixedTurnUseCase = ReturnType<typeof fixedTurnUseCase>;
