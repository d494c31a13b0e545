import { performance } from 'node:perf_hooks';
import { BadRequestError } from '@clinicalsuite/kit';
import type { IntentDecision } from '../domain/intent/index.js';
import { statedTargetLanguage } from '../domain/intent/translate-target.js';
import { isLlmIntent, userTurn, type LlmIntent } from '../domain/prompts.js';
import type { ConcreteIntent, Intent, Language, UpstreamId } from '../domain/types.js';
import type { IntentActions } from './intent-actions.js';
import type { Call, IntentDecider, Transport } from './ports.js';
import { streamTurn, wholeReplyEvents, type TurnEvent } from './streamed-turn.js';
import {
  completeTurn,
  recordTurn,
  type StartedSession,
  type TurnDeps,
  type TurnReply,
  type TurnRequest,
} from './turn.js';

/**
 * A message (`/run`, `/ws/chat`, and `/run/multipart` once its file was read): decide its intent
 * (forced, or detected by the rules and the LLM classifier), then answer it with an LLM turn or with
 * the intent's action (a sub-service, the shell), recorded in the session like an LLM turn. Answered
 * whole, or streamed as events (an action's reply as one fragment, in the same framing).
 */

export type MessageDeps = TurnDeps & { readonly intents: IntentDecider; readonly actions: IntentActions };

export interface MessageInput {
  readonly text: string;
  readonly language: Language;
  readonly sessionId: string | null;
  readonly force: Intent | null;
  readonly prefer: UpstreamId | null;
  readonly patientId?: string | undefined;
  /**
   * The user's own words when `text` adds what a file held (transcript, OCR): where a translate
   * request's target language is looked for. Default: `text`.
   */
  readonly instruction?: string;
  readonly hints?: { audio?: boolean; image?: boolean };
  /**
   * The session as the request found it, when it was looked up before slow work (a file read):
   * the turn records into it, so that one deleted meanwhile stays deleted. Default: looked up when
   * the turn runs.
   */
  readonly started?: StartedSession;
}

/** Intents that need a file: as a text message they are answered as chat unless forced (then 400). */
export const FILE_INTENTS: ReadonlySet<ConcreteIntent> = new Set<ConcreteIntent>([
  'transcribe',
  'ocr',
  'face_recognize',
]);

export function messageUseCase(deps: MessageDeps) {
  /** The intent of a text message, one that can run without a file. */
  const decide = async (input: MessageInput, signal: AbortSignal): Promise<IntentDecision> =>
    runnableIntent(await decideIntent(deps, input, signal), {
      file: false,
      patient: input.patientId !== undefined,
    });
  return {
    /** The message answered whole. */
    answer: async (input: MessageInput, call: Call): Promise<TurnReply> =>
      answerDecided(deps, input, await decide(input, call.signal), call),
    /** The message streamed: fails before any event when it cannot start (then nothing was sent). */
    stream: async function* (
      input: MessageInput,
      call: Call,
      transport: Transport,
    ): AsyncGenerator<TurnEvent, void, undefined> {
      yield* streamDecided(deps, input, await decide(input, call.signal), call, transport);
    },
  };
}

export type MessageUseCase = ReturnType<typeof messageUseCase>;

/** Decides the intent of a message. */
export function decideIntent(
  deps: Pick<MessageDeps, 'intents'>,
  input: MessageInput,
  signal: AbortSignal,
): Promise<IntentDecision> {
  return deps.intents.decide(
    {
      message: input.text,
      language: input.language,
      force: input.force,
      ...(input.hints ? { hints: input.hints } : {}),
    },
    signal,
  );
}

/**
 * The intent that will really run. One that cannot run as asked (transcribe, ocr or face without a
 * file; patient_sim without a `patient_id`) is refused when forced, with what it needs, and answered
 * as chat when only detected (the rules matched a word, not a request the agent can carry out).
 */
export function runnableIntent(
  decision: IntentDecision,
  has: { file: boolean; patient: boolean },
): IntentDecision {
  const missing =
    FILE_INTENTS.has(decision.intent) && !has.file
      ? `a file: send it to /run/multipart (field ${decision.intent === 'transcribe' ? 'audio' : 'image'}) or to /${
          decision.intent === 'face_recognize' ? 'face' : decision.intent
        }`
      : decision.intent === 'patient_sim' && !has.patient
        ? '`patient_id` (a case of the patient simulator), or use /patient'
        : undefined;
  if (missing === undefined) return decision;
  if (decision.source === 'forced') {
    throw new BadRequestError(`The ${decision.intent} intent needs ${missing}`, { param: 'force_intent' });
  }
  return { ...decision, intent: 'chat', source: 'default' };
}

/**
 * The LLM turn of a message. A translate request that names its target language ("Dịch sang tiếng
 * Anh: …", "Translate into Vietnamese: …") is translated into that language, not into the request's
 * `language` (which then only sets the language of the instructions): the message, being the
 * instruction itself, goes to the LLM as it is, under a system prompt naming the same target. A
 * message that names none ("dịch giúp tôi đoạn này: …") is framed to be translated into `language`.
 */
export function llmTurnRequest(
  deps: Pick<MessageDeps, 'config'>,
  input: MessageInput,
  intent: LlmIntent,
  decision: Pick<IntentDecision, 'intent' | 'source'>,
  options: { maxTokens?: number | undefined; temperature?: number | undefined } = {},
): TurnRequest {
  const stated = intent === 'translate' ? statedTargetLanguage(input.instruction ?? input.text) : null;
  return {
    text: input.text,
    user:
      stated === null ? userTurn(intent, input.text, input.language) : { role: 'user', content: input.text },
    ...(stated === null ? {} : { targetLang: stated }),
    intent,
    decision: { intent, source: decision.source },
    language: input.language,
    sessionId: input.sessionId,
    ...(input.started === undefined ? {} : { started: input.started }),
    prefer: input.prefer,
    maxTokens: options.maxTokens ?? deps.config.AGENT_MAX_TOKENS,
    temperature: options.temperature ?? deps.config.AGENT_TEMPERATURE,
  };
}

/** A decided intent answered whole: an LLM turn, or the intent's action recorded like one. */
export async function answerDecided(
  deps: MessageDeps,
  input: MessageInput,
  decision: IntentDecision,
  call: Call,
): Promise<TurnReply> {
  deps.metrics.intents.inc({ intent: decision.intent, source: decision.source });
  if (isLlmIntent(decision.intent)) {
    return completeTurn(deps, llmTurnRequest(deps, input, decision.intent, decision), call);
  }
  const action = deps.actions[decision.intent];
  if (action === undefined) {
    throw new BadRequestError(`The ${decision.intent} intent is not available through this endpoint`, {
      param: 'force_intent',
    });
  }
  // One id for the agent's session and the sub-service's (the patient simulator keeps its own).
  const id = input.sessionId ?? deps.newSessionId();
  const started = input.started !== undefined ? input.started.session : deps.sessions.peek(id, deps.now());
  const reply = await action(
    { text: input.text, language: input.language, sessionId: id, patientId: input.patientId },
    call.signal,
    call.log,
  );
  const session = recordTurn(deps, id, input.text, reply.response, decision.intent, reply.model, started);
  return {
    response: reply.response,
    intent: decision.intent,
    model: reply.model,
    ...session,
    processing_time_ms: Math.round(performance.now() - call.since),
    intent_source: decision.source,
    fell_back_from: [],
    finish_reason: null,
    usage: null,
    history_trimmed: 0,
    data: reply.data,
  };
}

/**
 * A decided intent streamed: an LLM intent streams its fragments; any other runs whole and is sent
 * as its data and one fragment.
 */
export async function* streamDecided(
  deps: MessageDeps,
  input: MessageInput,
  decision: IntentDecision,
  call: Call,
  transport: Transport,
): AsyncGenerator<TurnEvent, void, undefined> {
  if (isLlmIntent(decision.intent)) {
    deps.metrics.intents.inc({ intent: decision.intent, source: decision.source });
    yield* streamTurn(deps, llmTurnRequest(deps, input, decision.intent, decision), call.signal, transport);
    return;
  }
  yield* wholeReplyEvents(await answerDecided(deps, input, decision, call));
}
