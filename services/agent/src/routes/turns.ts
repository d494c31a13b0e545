import { performance } from 'node:perf_hooks';
import { BadRequestError, ClientClosedRequestError } from '@clinicalsuite/kit';
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
import type { AgentRuntime } from './runtime.js';

/**
 * One conversational turn answered by an LLM, streamed or not: read the session's history (without
 * touching the session), fit it into the context with the system prompt and the new message, call
 * the router, and only when the reply completed open the session (creating it, which may evict the
 * least recently used one) and record the exchange. A refused, failed or aborted turn leaves the
 * sessions exactly as they were.
 */

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

export interface TurnReply {
  readonly response: string;
  readonly intent: ConcreteIntent;
  readonly model: string;
  readonly session_id: string;
  readonly session_deleted?: true;
  readonly processing_time_ms: number;
  readonly intent_source: IntentDecision['source'];
  readonly fell_back_from: UpstreamId[];
  readonly finish_reason: string | null;
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  readonly history_trimmed: number;
  readonly data?: Record<string, unknown>;
}

/** Where a streamed turn goes: SSE or a WebSocket. */
export interface FragmentSink {
  /** Before the first fragment, once the answering upstream is known. */
  start(meta: { intent: ConcreteIntent; model: string; session_id: string }): void;
  fragment(text: string): Promise<void>;
  /** A reply's data (a sub-service's result: audio, codes...), after `start`, before the text. */
  data(data: Record<string, unknown>): Promise<void>;
  /**
   * The reply completed, and where its exchange went: a session deleted while the turn ran
   * (`session_deleted`) is said before the end, as the non-streamed reply says it.
   */
  end(recorded: RecordedTurn): void;
}

/**
 * Streams a reply that is already whole (an intent a sub-service or the shell answered): the
 * metadata, its data when it has some, its text as one fragment, the end. The same framing as an
 * LLM's reply, so a client needs one code path; the data is what the non-streamed reply carries.
 */
export async function sendWhole(sink: FragmentSink, reply: TurnReply): Promise<void> {
  sink.start({ intent: reply.intent, model: reply.model, session_id: reply.session_id });
  if (reply.data !== undefined) await sink.data(reply.data);
  await sink.fragment(reply.response);
  sink.end(reply);
}

interface Prepared {
  /** The session the turn belongs to: an existing one, or the id a new one will take. */
  readonly sessionId: string;
  /** The session as the turn found it (undefined: none yet), to record into when it completes. */
  readonly started: Session | undefined;
  readonly call: LlmCall;
  readonly trimmed: number;
}

export function prepareTurn(rt: AgentRuntime, req: TurnRequest): Prepared {
  const sessionId = req.sessionId ?? rt.newSessionId();
  const started = req.started !== undefined ? req.started.session : rt.sessions.peek(sessionId, rt.now());
  const system = [systemPrompt(req.intent, req.language, req.system, req.targetLang)];
  // A session deleted since the request began is forgotten: its history is not sent either.
  const history: ChatMessage[] =
    req.withoutHistory || rt.sessions.wasDeleted(started)
      ? []
      : (started?.messages ?? []).map((m) => ({ role: m.role, content: m.content }));
  const fit = fitHistory(system, history, [req.user], rt.config.AGENT_CONTEXT_TOKENS, req.maxTokens);
  if ('overBy' in fit) {
    throw new BadRequestError(
      `The message does not fit the model's context: about ${fit.overBy} tokens over ` +
        `(${rt.config.AGENT_CONTEXT_TOKENS} tokens of context, ${req.maxTokens} reserved for the reply). ` +
        'Shorten the message or lower max_tokens.',
      { param: 'message', code: 'context_length_exceeded' },
    );
  }
  if (fit.dropped > 0) rt.metrics.historyTrimmed.inc(fit.dropped);
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

export async function completeTurn(
  rt: AgentRuntime,
  req: TurnRequest,
  signal: AbortSignal,
  receivedAt: number,
): Promise<TurnReply> {
  const { sessionId, started, call, trimmed } = prepareTurn(rt, req);
  const result = await rt.router.complete(call, signal);
  const session = recordTurn(rt, sessionId, req.text, result.text, req.intent, result.model, started);
  const total = performance.now() - receivedAt;
  rt.metrics.overhead.observe(Math.max(0, total - result.llmMs) / 1000);
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
 * Streams a turn into `sink`. Resolves when the reply ended; rejects before `sink.start` when no
 * upstream could start it (the caller answers with an error status), or after it with the failure
 * (the caller ends the stream with an error event).
 */
export async function streamTurn(
  rt: AgentRuntime,
  req: TurnRequest,
  signal: AbortSignal,
  sink: FragmentSink,
  transport: 'sse' | 'ws',
): Promise<void> {
  const { sessionId, started, call } = prepareTurn(rt, req);
  const stream = await rt.router.stream(call, signal);
  sink.start({ intent: req.intent, model: stream.model, session_id: sessionId });
  const open = rt.metrics.streamsOpen.labels({ transport });
  open.inc();
  let text = '';
  try {
    for await (const fragment of stream) {
      if (signal.aborted) break;
      text += fragment;
      await sink.fragment(fragment);
    }
  } finally {
    open.dec();
  }
  // Cut short (deadline, client gone) while the sink waited: a failure, never a quiet end, so the
  // caller ends the stream with its error (and [DONE]).
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new ClientClosedRequestError();
  sink.end(recordTurn(rt, sessionId, req.text, text, req.intent, stream.model, started));
}

/** Where a turn's exchange went: its session, or (`session_deleted`) nowhere. */
export interface RecordedTurn {
  readonly session_id: string;
  /** The session was deleted while the turn ran: the exchange was not kept, the id is gone. */
  readonly session_deleted?: true;
}

/**
 * Records a completed turn (an LLM's, a sub-service's, the shell's): opens the session, creating it
 * when absent (or expired or evicted while the turn ran), and appends the exchange. `started` is the
 * session as the turn found it when it began (`rt.sessions.peek`): if it was deleted since, the
 * delete wins (the clinician asked to forget the conversation) and nothing is recorded.
 */
export function recordTurn(
  rt: AgentRuntime,
  sessionId: string,
  text: string,
  reply: string,
  intent: ConcreteIntent,
  model: string,
  started: Session | undefined,
): RecordedTurn {
  if (rt.sessions.wasDeleted(started)) return { session_id: sessionId, session_deleted: true };
  const now = rt.now();
  const { session, created } = rt.sessions.open(sessionId, now);
  if (created) rt.metrics.sessionsCreated.inc();
  rt.sessions.record(
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
