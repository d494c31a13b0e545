import { userTurn } from '../domain/prompts.js';
import type { Language } from '../domain/types.js';
import type { Call } from './ports.js';
import { completeTurn, type TurnDeps, type TurnReply } from './turn.js';

/**
 * `/translate`: a standalone text translated (no history in the prompt, the exchange recorded),
 * at a low temperature.
 */

export interface TranslationInput {
  readonly text: string;
  readonly sourceLang: string;
  readonly targetLang: string;
  readonly sessionId: string | null;
}

export interface TranslationReply extends TurnReply {
  readonly source_text: string;
  readonly target_lang: string;
  readonly translated: string;
}

export function translationUseCase(deps: TurnDeps) {
  return async (input: TranslationInput, call: Call): Promise<TranslationReply> => {
    const { config } = deps;
    const language: Language = input.targetLang === 'en' ? 'en' : 'vi';
    const reply = await completeTurn(
      deps,
      {
        text: input.text,
        user: userTurn('translate', input.text, language, {
          sourceLang: input.sourceLang,
          targetLang: input.targetLang,
        }),
        targetLang: input.targetLang,
        intent: 'translate',
        decision: { intent: 'translate', source: 'fixed' },
        language,
        sessionId: input.sessionId,
        prefer: null,
        maxTokens: config.AGENT_MAX_TOKENS,
        temperature: Math.min(config.AGENT_TEMPERATURE, 0.2),
        withoutHistory: true,
      },
      call,
    );
    deps.metrics.intents.inc({ intent: 'translate', source: 'fixed' });
    return {
      ...reply,
      source_text: input.text,
      target_lang: input.targetLang,
      translated: reply.response.trim(),
    };
  };
}
