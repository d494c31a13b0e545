import { userTurn } from '../domain/prompts.js';
import type { Language } from '../domain/types.js';
import type { Call } from './ports.js';
import { completeTurn, type TurnDeps, type TurnReply } from './turn.js';

/** `/summarize`: a standalone text summarised (no history in the prompt, the exchange recorded). */

export interface SummaryInput {
  readonly text: string;
  readonly language: Language;
  readonly sessionId: string | null;
  /** Default: AGENT_MAX_TOKENS. */
  readonly maxTokens?: number | undefined;
}

export function summaryUseCase(deps: TurnDeps) {
  return (input: SummaryInput, call: Call): Promise<TurnReply> => {
    const { config } = deps;
    deps.metrics.intents.inc({ intent: 'summarize', source: 'fixed' });
    return completeTurn(
      deps,
      {
        text: input.text,
        user: userTurn('summarize', input.text, input.language),
        intent: 'summarize',
        decision: { intent: 'summarize', source: 'fixed' },
        language: input.language,
        sessionId: input.sessionId,
        prefer: null,
        maxTokens: input.maxTokens ?? config.AGENT_MAX_TOKENS,
        temperature: Math.min(config.AGENT_TEMPERATURE, 0.3),
        withoutHistory: true,
      },
      call,
    );
  };
}
