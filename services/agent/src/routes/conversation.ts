import { performance } from 'node:perf_hooks';
import { BadRequestError, defineRoute, type AnyRoute, type Logger } from '@clinicalsuite/kit';
import type { Request, Response } from 'express';
import type { IntentDecision } from '../domain/intent/index.js';
import { statedTargetLanguage } from '../domain/intent/translate-target.js';
import { debugTurn, isLlmIntent, userTurn, type LlmIntent } from '../domain/prompts.js';
import type { ConcreteIntent, Intent, Language, UpstreamId } from '../domain/types.js';
import {
  AnalyzeRequestSchema,
  ChatRequestSchema,
  CodeRequestSchema,
  DebugRequestSchema,
  RunRequestSchema,
  SummarizeRequestSchema,
  TranslateRequestSchema,
  TranslateResponseSchema,
  TurnResponseSchema,
} from '../schemas/api.js';
import { FILE_INTENTS, type IntentActions } from './actions.js';
import type { AgentRuntime } from './runtime.js';
import { sseSink } from './sse.js';
import {
  completeTurn,
  recordTurn,
  sendWhole,
  streamTurn,
  type StartedSession,
  type TurnReply,
  type TurnRequest,
} from './turns.js';

/**
 * The conversational endpoints: `/run` (intent detected or forced, dispatched to an LLM or a
 * sub-service), and the fixed-intent `/chat`, `/analyze`, `/code`, `/debug`, `/translate`,
 * `/summarize`. `stream: true` answers SSE where the spec allows it (/run, /chat, /code, /debug; and
 * /analyze, which is /run with the intent fixed).
 */

const STREAM_DOC = {
  200: {
    description:
      'With `stream: true`: server-sent events, each a text fragment, ending with `data: [DONE]`; ' +
      'headers x-agent-intent, x-agent-model and x-agent-session-id say what answered. An intent a ' +
      'sub-service answers sends its `data` first as an event named `data` (JSON). A failure after ' +
      'the first fragment sends an event named `error` (`{error:{message,code}}`), then `data: [DONE]`',
    contentType: 'text/event-stream',
  },
  400: {
    description:
      "The message does not fit the context (the agent's estimate, or an LLM refused it as too long), " +
      'or a file intent was forced without a file',
  },
  401: { description: 'Missing or invalid token' },
  502: { description: 'Every LLM upstream (or the sub-service) failed or timed out; the message names them' },
  504: { description: "The request passed the agent's own deadline (REQUEST_TIMEOUT_MS)" },
} as const;

export interface DispatchInput {
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
  /** Set when the text came from a file (transcript, OCR): the intent that produced it. */
  readonly from?: ConcreteIntent;
  /**
   * The session as the request found it, when it was looked up before slow work (a file read):
   * the turn records into it, so that one deleted meanwhile stays deleted. Default: looked up when
   * the turn runs.
   */
  readonly started?: StartedSession;
}

/** Decides the intent of a `/run`-style message and counts it. */
export async function decideIntent(
  rt: AgentRuntime,
  input: DispatchInput,
  signal: AbortSignal,
): Promise<IntentDecision> {
  const decision = await rt.intents.decide(
    {
      message: input.text,
      language: input.language,
      force: input.force,
      ...(input.hints ? { hints: input.hints } : {}),
    },
    signal,
  );
  return decision;
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
 * The LLM turn of a `/run`-style message. A translate request that names its target language ("Dịch
 * sang tiếng Anh: …", "Translate into Vietnamese: …") is translated into that language, not into the
 * request's `language` (which then only sets the language of the instructions): the message, being
 * the instruction itself, goes to the LLM as it is, under a system prompt naming the same target. A
 * message that names none ("dịch giúp tôi đoạn này: …") is framed to be translated into `language`.
 */
export function llmTurnRequest(
  rt: AgentRuntime,
  input: DispatchInput,
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
    maxTokens: options.maxTokens ?? rt.config.AGENT_MAX_TOKENS,
    temperature: options.temperature ?? rt.config.AGENT_TEMPERATURE,
  };
}

/**
 * Runs a decided intent without streaming: an LLM turn, or the intent's action (sub-service, shell),
 * recorded in the session like an LLM turn.
 */
export async function dispatch(
  rt: AgentRuntime,
  actions: IntentActions,
  input: DispatchInput,
  decision: IntentDecision,
  signal: AbortSignal,
  log: Logger,
  receivedAt: number,
): Promise<TurnReply> {
  rt.metrics.intents.inc({ intent: decision.intent, source: decision.source });
  if (isLlmIntent(decision.intent)) {
    return completeTurn(rt, llmTurnRequest(rt, input, decision.intent, decision), signal, receivedAt);
  }
  const action = actions[decision.intent];
  if (action === undefined) {
    throw new BadRequestError(`The ${decision.intent} intent is not available through this endpoint`, {
      param: 'force_intent',
    });
  }
  // One id for the agent's session and the sub-service's (the patient simulator keeps its own).
  const id = input.sessionId ?? rt.newSessionId();
  const started = input.started !== undefined ? input.started.session : rt.sessions.peek(id, rt.now());
  const reply = await action(
    { text: input.text, language: input.language, sessionId: id, patientId: input.patientId },
    signal,
    log,
  );
  const session = recordTurn(rt, id, input.text, reply.response, decision.intent, reply.model, started);
  return {
    response: reply.response,
    intent: decision.intent,
    model: reply.model,
    ...session,
    processing_time_ms: Math.round(performance.now() - receivedAt),
    intent_source: decision.source,
    fell_back_from: [],
    finish_reason: null,
    usage: null,
    history_trimmed: 0,
    data: reply.data,
  };
}

/**
 * Answers `stream: true`: an LLM intent streams its fragments; any other intent runs whole and is
 * sent as its data (an event named `data`, when it has some) and one fragment (the same framing,
 * so a client needs one code path).
 */
export async function dispatchStream(
  rt: AgentRuntime,
  actions: IntentActions,
  input: DispatchInput,
  decision: IntentDecision,
  ctx: { req: Request; res: Response; signal: AbortSignal; log: Logger; receivedAt: number },
): Promise<void> {
  const sink = sseSink(ctx.req, ctx.res);
  if (isLlmIntent(decision.intent)) {
    rt.metrics.intents.inc({ intent: decision.intent, source: decision.source });
    const request = llmTurnRequest(rt, input, decision.intent, decision);
    try {
      await streamTurn(rt, request, ctx.signal, sink, 'sse');
    } catch (error) {
      sink.fail(error); // rethrows when nothing was sent yet: the kit answers with the status
      ctx.log.warn({ err: error }, 'stream ended by a failure');
    }
    return;
  }
  const reply = await dispatch(rt, actions, input, decision, ctx.signal, ctx.log, ctx.receivedAt);
  await sendWhole(sink, reply);
}

export function conversationRoutes(rt: AgentRuntime, actions: IntentActions): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/run',
      summary: 'Run a message: detect (or force) the intent, answer with an LLM or a sub-service',
      description:
        '`force_intent` skips detection; `force_llm` (alpha4_service or beta3_service) is tried first. ' +
        'Code and debug go to beta3_service. Search, speech, patient simulation and shell intents call ' +
        'their sub-service; transcribe, ocr and face_recognize need a file (/run/multipart).',
      tags: ['agent'],
      body: RunRequestSchema,
      response: TurnResponseSchema,
      responses: STREAM_DOC,
      requiresReady: 'in-handler',
      handler: async ({ body, signal, log, req, res, receivedAt, requireReady }) => {
        const input: DispatchInput = {
          text: body.message,
          language: body.language,
          sessionId: body.session_id,
          force: body.force_intent,
          prefer: body.force_llm,
          patientId: body.patient_id,
        };
        if (body.message.trim() === '')
          throw new BadRequestError('`message` is empty: say something (or send a file to /run/multipart)', {
            param: 'message',
          });
        checkLength(rt, body.message);
        requireReady();
        const decision = runnableIntent(await decideIntent(rt, input, signal), {
          file: false,
          patient: body.patient_id !== undefined,
        });
        if (body.stream)
          return dispatchStream(rt, actions, input, decision, { req, res, signal, log, receivedAt });
        return dispatch(rt, actions, input, decision, signal, log, receivedAt);
      },
    }),
    fixedRoute(rt, {
      path: '/chat',
      intent: 'chat',
      summary: 'Chat with the primary LLM (intent fixed to chat); SSE with `stream: true`',
      schema: ChatRequestSchema,
    }),
    fixedRoute(rt, {
      path: '/analyze',
      intent: 'analyze',
      summary: 'Clinical analysis of symptoms and findings (intent fixed to analyze)',
      schema: AnalyzeRequestSchema,
    }),
    fixedRoute(rt, {
      path: '/code',
      intent: 'code',
      summary: 'Write code (routed to beta3_service); SSE with `stream: true`',
      schema: CodeRequestSchema,
    }),
    defineRoute({
      method: 'post',
      path: '/debug',
      summary: 'Debug code and its error message (routed to beta3_service); SSE with `stream: true`',
      description: 'Fields: `code`, `error` (message or stack trace), or everything in `message`.',
      tags: ['agent'],
      body: DebugRequestSchema,
      response: TurnResponseSchema,
      responses: STREAM_DOC,
      requiresReady: 'in-handler',
      handler: async ({ body, signal, log, req, res, receivedAt, requireReady }) => {
        const parts = [
          body.code.trim() !== '' || body.error.trim() !== ''
            ? debugTurn(body.code, body.error, body.language)
            : '',
          body.message.trim(),
        ].filter((p) => p !== '');
        const text = parts.join('\n\n');
        checkLength(rt, text);
        requireReady();
        const input: DispatchInput = {
          text,
          language: body.language,
          sessionId: body.session_id,
          force: 'debug',
          prefer: null,
        };
        const decision: IntentDecision = { intent: 'debug', source: 'fixed', confidence: 1, matched: [] };
        if (body.stream)
          return dispatchStream(rt, {}, input, decision, { req, res, signal, log, receivedAt });
        return dispatch(rt, {}, input, decision, signal, log, receivedAt);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/translate',
      summary: 'Translate a text (intent fixed to translate)',
      tags: ['agent'],
      body: TranslateRequestSchema,
      response: TranslateResponseSchema,
      requiresReady: 'in-handler',
      handler: async ({ body, signal, receivedAt, requireReady }) => {
        checkLength(rt, body.text);
        requireReady();
        const language: Language = body.target_lang === 'en' ? 'en' : 'vi';
        const reply = await completeTurn(
          rt,
          {
            text: body.text,
            user: userTurn('translate', body.text, language, {
              sourceLang: body.source_lang,
              targetLang: body.target_lang,
            }),
            targetLang: body.target_lang,
            intent: 'translate',
            decision: { intent: 'translate', source: 'fixed' },
            language,
            sessionId: body.session_id,
            prefer: null,
            maxTokens: rt.config.AGENT_MAX_TOKENS,
            temperature: Math.min(rt.config.AGENT_TEMPERATURE, 0.2),
            withoutHistory: true,
          },
          signal,
          receivedAt,
        );
        rt.metrics.intents.inc({ intent: 'translate', source: 'fixed' });
        return {
          ...reply,
          source_text: body.text,
          target_lang: body.target_lang,
          translated: reply.response.trim(),
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/summarize',
      summary: 'Summarise a text (intent fixed to summarize)',
      tags: ['agent'],
      body: SummarizeRequestSchema,
      response: TurnResponseSchema,
      requiresReady: 'in-handler',
      handler: async ({ body, signal, receivedAt, requireReady }) => {
        checkLength(rt, body.text);
        requireReady();
        rt.metrics.intents.inc({ intent: 'summarize', source: 'fixed' });
        return completeTurn(
          rt,
          {
            text: body.text,
            user: userTurn('summarize', body.text, body.language),
            intent: 'summarize',
            decision: { intent: 'summarize', source: 'fixed' },
            language: body.language,
            sessionId: body.session_id,
            prefer: null,
            maxTokens: body.max_tokens ?? rt.config.AGENT_MAX_TOKENS,
            temperature: Math.min(rt.config.AGENT_TEMPERATURE, 0.3),
            withoutHistory: true,
          },
          signal,
          receivedAt,
        );
      },
    }),
  ];
}

type FixedSchema = typeof ChatRequestSchema | typeof AnalyzeRequestSchema | typeof CodeRequestSchema;

function fixedRoute(
  rt: AgentRuntime,
  options: { path: string; intent: LlmIntent; summary: string; schema: FixedSchema },
): AnyRoute {
  return defineRoute({
    method: 'post',
    path: options.path,
    summary: options.summary,
    tags: ['agent'],
    body: options.schema,
    response: TurnResponseSchema,
    responses: STREAM_DOC,
    requiresReady: 'in-handler',
    handler: async ({ body, signal, log, req, res, receivedAt, requireReady }) => {
      const b = body as {
        message: string;
        session_id: string | null;
        language: Language;
        stream: boolean;
        max_tokens?: number;
        temperature?: number;
        force_llm?: UpstreamId | null;
      };
      checkLength(rt, b.message);
      requireReady();
      const input: DispatchInput = {
        text: b.message,
        language: b.language,
        sessionId: b.session_id,
        force: options.intent,
        prefer: b.force_llm ?? null,
      };
      const decision: IntentDecision = {
        intent: options.intent,
        source: 'fixed',
        confidence: 1,
        matched: [],
      };
      const sizes = { maxTokens: b.max_tokens, temperature: b.temperature };
      if (b.stream) {
        const sink = sseSink(req, res);
        rt.metrics.intents.inc({ intent: options.intent, source: 'fixed' });
        try {
          await streamTurn(
            rt,
            llmTurnRequest(rt, input, options.intent, decision, sizes),
            signal,
            sink,
            'sse',
          );
        } catch (error) {
          sink.fail(error);
          log.warn({ err: error }, 'stream ended by a failure');
        }
        return undefined;
      }
      rt.metrics.intents.inc({ intent: options.intent, source: 'fixed' });
      return completeTurn(rt, llmTurnRequest(rt, input, options.intent, decision, sizes), signal, receivedAt);
    },
  });
}

export function checkLength(rt: AgentRuntime, text: string): void {
  if (text.length > rt.config.AGENT_MAX_MESSAGE_CHARS) {
    throw new BadRequestError(
      `The message is ${text.length} characters long; at most ${rt.config.AGENT_MAX_MESSAGE_CHARS} (AGENT_MAX_MESSAGE_CHARS)`,
      { param: 'message' },
    );
  }
}
