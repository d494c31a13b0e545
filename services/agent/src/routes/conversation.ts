import { BadRequestError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { checkMessageLength } from '../domain/messages.js';
import { debugRequestText, type LlmIntent } from '../domain/prompts.js';
import type { Language, UpstreamId } from '../domain/types.js';
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
import type { FixedTurnInput } from '../use-cases/fixed-turn.js';
import type { RoutesContext } from './context.js';
import { sendTurnEvents } from './sse.js';

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

export function conversationRoutes(ctx: RoutesContext): AnyRoute[] {
  const { config, useCases } = ctx;
  const checkLength = (text: string): void => checkMessageLength(text, config.AGENT_MAX_MESSAGE_CHARS);
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
        if (body.message.trim() === '')
          throw new BadRequestError('`message` is empty: say something (or send a file to /run/multipart)', {
            param: 'message',
          });
        checkLength(body.message);
        requireReady();
        const input = {
          text: body.message,
          language: body.language,
          sessionId: body.session_id,
          force: body.force_intent,
          prefer: body.force_llm,
          patientId: body.patient_id,
        };
        const call = { signal, log, since: receivedAt };
        if (body.stream) return sendTurnEvents(req, res, useCases.message.stream(input, call, 'sse'), log);
        return useCases.message.answer(input, call);
      },
    }),
    fixedRoute(ctx, {
      path: '/chat',
      intent: 'chat',
      summary: 'Chat with the primary LLM (intent fixed to chat); SSE with `stream: true`',
      schema: ChatRequestSchema,
    }),
    fixedRoute(ctx, {
      path: '/analyze',
      intent: 'analyze',
      summary: 'Clinical analysis of symptoms and findings (intent fixed to analyze)',
      schema: AnalyzeRequestSchema,
    }),
    fixedRoute(ctx, {
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
        const text = debugRequestText(body.code, body.error, body.message, body.language);
        checkLength(text);
        requireReady();
        const input: FixedTurnInput = {
          intent: 'debug',
          text,
          language: body.language,
          sessionId: body.session_id,
          prefer: null,
        };
        const call = { signal, log, since: receivedAt };
        if (body.stream) return sendTurnEvents(req, res, useCases.fixedTurn.stream(input, call, 'sse'), log);
        return useCases.fixedTurn.answer(input, call);
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
      handler: async ({ body, signal, log, receivedAt, requireReady }) => {
        checkLength(body.text);
        requireReady();
        return useCases.translate(
          {
            text: body.text,
            sourceLang: body.source_lang,
            targetLang: body.target_lang,
            sessionId: body.session_id,
          },
          { signal, log, since: receivedAt },
        );
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
      handler: async ({ body, signal, log, receivedAt, requireReady }) => {
        checkLength(body.text);
        requireReady();
        return useCases.summarize(
          {
            text: body.text,
            language: body.language,
            sessionId: body.session_id,
            maxTokens: body.max_tokens,
          },
          { signal, log, since: receivedAt },
        );
      },
    }),
  ];
}

type FixedSchema = typeof ChatRequestSchema | typeof AnalyzeRequestSchema | typeof CodeRequestSchema;

function fixedRoute(
  ctx: RoutesContext,
  options: { path: string; intent: LlmIntent; summary: string; schema: FixedSchema },
): AnyRoute {
  const { config, useCases } = ctx;
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
      checkMessageLength(b.message, config.AGENT_MAX_MESSAGE_CHARS);
      requireReady();
      const input: FixedTurnInput = {
        intent: options.intent,
        text: b.message,
        language: b.language,
        sessionId: b.session_id,
        prefer: b.force_llm ?? null,
        maxTokens: b.max_tokens,
        temperature: b.temperature,
      };
      const call = { signal, log, since: receivedAt };
      if (b.stream) {
        await sendTurnEvents(req, res, useCases.fixedTurn.stream(input, call, 'sse'), log);
        return undefined;
      }
      return useCases.fixedTurn.answer(input, call);
    },
  });
}
