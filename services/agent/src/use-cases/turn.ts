import { performance } from 'node:perf_hooks';
import { BadRequestError } from '@clinicalsuite/kit';
import type { IntentDecision } from '../domain/intent/index.js';
import { systemPrompt, type LlmIntent } from '../domain/prompts.js';
import { fitHistory, type Session } from '../domain/sessions.js';
import type {
  ChatMessage,
  ConcreteIntent,
  Language,
  LlmCall,
  LlmUsage,
  UpstreamId,
} from '../domain/types.js';
import type { Call, UseCaseDeps } from './ports.js';

/**
 * One conversational turn answered by an LLM: read the session's history (without touching the
 * session), fit it into the context with the system prompt and the new message, call the router,
 * and only when the reply completed open the session (creating it, which may evict the least
 * recently used one) and record the exchange. A refused, failed or aborted turn leaves the sessions
 * exactly as they were. The streamed turn (streamed-turn.ts) shares the preparation and the record.
 */

export type TurnDeps = Pick<
  UseCaseDeps,
  'config' | 'router' | 'sessions' | 'metrics' | 'now' | 'newSessionId'
>;

export interface TurnRequest {
  /** What the user said, as recorded in the session. */
  readonly text: string;
  /** The user turn sent to the LLM (the text, or the text framed for the intent). */
  readonly user: ChatMessage;
  readonly intent: LlmIntent;
  readonly decision: Pick<IntentDecision, 'intent' | 'source'>;
  readonly language: Language;
  readonly sessionId: string | null;
  readonly prefer: UpstreamId | null;
  readonly maxTokens: number;
  readonly temperature: number;
  /** Replaces the intent's system prompt. */
  readonly system?: string | null;
  /** Translate: the language to translate into (a code, `vi`, `en`, `fr`...); default `language`. */
  readonly targetLang?: string;
  /** Leave the session's history out of the prompt (e.g. /translate of a standalone text). */
  readonly withoutHistory?: boolean;
  /** The session as the request found it before slow work (a file read); default: looked up now. */
  readonly started?: StartedSession;
}

/** A session looked up when a request began (undefined: there was none). */
export interface StartedSession {
  readonly session: Session | undefined;
}

/** Where a turn's exchange went: its session, or (`session_deleted`) nowhere. */
export interface RecordedTurn {
  readonly session_id: string;
  /** The session was deleted while the turn ran: the exchange was not kept, the id is gone. */
  readonly session_deleted?: true;
}

export interface TurnReply extends RecordedTurn {
  readonly response: string;
  readonly intent: ConcreteIntent;
  readonly model: string;
  readonly processing_time_ms: number;
  readonly intent_source: IntentDecision['source'];
  readonly fell_back_from: UpstreamId[];
  readonly finish_reason: string | null;
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  readonly history_trimmed: number;
  readonly data?: Record<string, unknown>;
}

export interface PreparedTurn {
  /** The session the turn belongs to: an existing one, or the id a new one will take. */
  readonly sessionId: string;
  /** The session as the turn found it (undefined: none yet), to record into when it completes. */
  readonly started: Session | undefined;
  readonly call: LlmCall;
  readonly trimmed: number;
}

export function prepareTurn(deps: TurnDeps, req: TurnRequest): PreparedTurn {
  const { config, sessions } = deps;
  const sessionId = req.sessionId ?? deps.newSessionId();
  const started = req.started !== undefined ? req.started.session : sessions.peek(sessionId, deps.now());
  const system = [systemPrompt(req.intent, req.language, req.system, req.targetLang)];
  // A session deleted since the request began is forgotten: its history is not sent either.
  const history: ChatMessage[] =
    req.withoutHistory || sessions.wasDeleted(started)
      ? []
      : (started?.messages ?? []).map((m) => ({ role: m.role, content: m.content }));
  const fit = fitHistory(system, history, [req.user], config.AGENT_CONTEXT_TOKENS, req.maxTokens);
  if ('overBy' in fit) {
    throw new BadRequestError(
      `The message does not fit the model's context: about ${fit.overBy} tokens over ` +
        `(${config.AGENT_CONTEXT_TOKENS} tokens of context, ${req.maxTokens} reserved for the reply). ` +
        'Shorten the message or lower max_tokens.',
      { param: 'message', code: 'context_length_exceeded' },
    );
  }
  if (fit.dropped > 0) deps.metrics.historyTrimmed.inc(fit.dropped);
  return {
    sessionId,
    started,
    trimmed: fit.dropped,
    call: {
      messages: [...system, ...fit.kept, req.user],
      maxTokens: req.maxTokens,
      temperature: req.temperature,
      intent: req.intent,
      prefer: req.prefer,
    },
  };
}

/** A turn answered whole. */
export async function completeTurn(
  deps: TurnDeps,
  req: TurnRequest,
  call: Pick<Call, 'signal' | 'since'>,
): Promise<TurnReply> {
  const { sessionId, started, call: llmCall, trimmed } = prepareTurn(deps, req);
  const result = await deps.router.complete(llmCall, call.signal);
  const session = recordTurn(deps, sessionId, req.text, result.text, req.intent, result.model, started);
  const total = performance.now() - call.since;
  deps.metrics.overhead.observe(Math.max(0, total - result.llmMs) / 1000);
  return {
    response: result.text,
    intent: req.intent,
    model: result.model,
    ...session,
    processing_time_ms: Math.round(total),
    intent_source: req.decision.source,
    fell_back_from: [...result.fellBackFrom],
    finish_reason: result.finishReason,
    usage: usageBody(result.usage),
    history_trimmed: trimmed,
  };
}

/**
 * Records a completed turn (an LLM's, a sub-service's, the shell's): opens the session, creating it
 * when absent (or expired or evicted while the turn ran), and appends the exchange. `started` is the
 * session as the turn found it when it began (`sessions.peek`): if it was deleted since, the delete
 * wins (the clinician asked to forget the conversation) and nothing is recorded.
 */
export function recordTurn(
  deps: Pick<TurnDeps, 'sessions' | 'metrics' | 'now'>,
  sessionId: string,
  text: string,
  reply: string,
  intent: ConcreteIntent,
  model: string,
  started: Session | undefined,
): RecordedTurn {
  const { sessions } = deps;
  if (sessions.wasDeleted(started)) return { session_id: sessionId, session_deleted: true };
  const now = deps.now();
  const { session, created } = sessions.open(sessionId, now);
  if (created) deps.metrics.sessionsCreated.inc();
  sessions.record(
    session,
    [
      { role: 'user', content: text, timestamp: now },
      { role: 'assistant', content: reply, timestamp: now, intent, model },
    ],
    now,
  );
  return { session_id: session.id };
}

export function usageBody(u: LlmUsage): {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
} {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.totalTokens,
  };
}
