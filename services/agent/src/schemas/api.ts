import { z } from 'zod';
import { INTENTS, LANGUAGES, RUN_UPSTREAM_IDS, UPSTREAM_IDS } from '../domain/types.js';
import { OpenAiMessageSchema, chatCompletionRequestSchema } from '@clinicalsuite/kit/llm';

/**
 * Request and response bodies of the agent's conversational endpoints, as the spec writes them
 * (field names, defaults); where the spec says "not shown", the shapes here are the design, and
 * the OpenAPI document at /openapi.json is generated from them.
 */

export const IntentSchema = z.enum(INTENTS);
export const LanguageSchema = z.enum(LANGUAGES).describe('Language of the reply: vi or en');
export const UpstreamIdSchema = z.enum(UPSTREAM_IDS);
/**
 * A session id a client may choose: 1 to 128 letters, digits, `.`, `_`, `:` or `-`, starting with a
 * letter or a digit. Exactly the ids the patient simulator takes (its SESSION_ID), since a
 * patient_sim turn hands the agent's session id to it as its own.
 */
export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const SessionIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(SESSION_ID, 'letters, digits and . _ : -, starting with a letter or a digit');
const sessionId = SessionIdSchema.nullable()
  .default(null)
  .describe('Continue this session (created when unknown); null starts a new one');
const message = z.string().describe('The user message');
const maxTokens = z.number().int().min(1).max(32_768);
const temperature = z.number().min(0).max(2);

export const RootSchema = z.object({
  service: z.literal('ai_agent'),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'not_ready']),
  docs: z.string(),
  openapi: z.string(),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('ai_agent'),
  port: z.number().int(),
  version: z.string(),
  llms: z.array(z.object({ id: UpstreamIdSchema, state: z.string(), cooling_down: z.boolean() })),
  reason: z.string().optional(),
});

export const RunRequestSchema = z.object({
  message: message.default(''),
  session_id: sessionId,
  language: LanguageSchema.default('vi'),
  force_intent: IntentSchema.nullable().default(null).describe('Skip detection: use this intent'),
  force_llm: z
    .enum(RUN_UPSTREAM_IDS)
    .nullable()
    .default(null)
    .describe('Try this LLM first (the others stay as fallbacks); null lets the agent choose'),
  stream: z.boolean().default(false).describe('Answer as server-sent events: text fragments, then [DONE]'),
  patient_id: z.string().min(1).max(200).optional().describe('For the patient_sim intent: the case to play'),
});

/** What every /run-like reply carries. */
export const TurnResponseSchema = z.object({
  response: z.string(),
  intent: z.string().describe('The intent that was carried out'),
  model: z.string().describe('The LLM identifier that answered, or the sub-service that did'),
  session_id: z.string(),
  session_deleted: z
    .literal(true)
    .optional()
    .describe(
      'Present when the session was deleted (DELETE /sessions/{session_id}) while this turn ran: ' +
        'the delete wins, the exchange was not kept and the session stays gone',
    ),
  processing_time_ms: z.number().int(),
  intent_source: z.enum(['forced', 'fixed', 'rules', 'llm', 'default']),
  fell_back_from: z.array(UpstreamIdSchema).describe('LLMs that failed before `model` answered'),
  finish_reason: z.string().nullable(),
  usage: z
    .object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      total_tokens: z.number().int(),
    })
    .nullable(),
  history_trimmed: z.number().int().describe('Earlier messages left out of the prompt to fit the context'),
  data: z.record(z.string(), z.unknown()).optional().describe("A sub-service's structured result"),
});

export const ChatRequestSchema = z.object({
  message: message.min(1),
  session_id: sessionId,
  language: LanguageSchema.default('vi'),
  stream: z.boolean().default(false),
  max_tokens: maxTokens.optional().describe('Default: AGENT_MAX_TOKENS'),
  temperature: temperature.optional().describe('Default: AGENT_TEMPERATURE'),
  force_llm: UpstreamIdSchema.nullable().default(null),
});

export const AnalyzeRequestSchema = z.object({
  message: message.min(1),
  session_id: sessionId,
  language: LanguageSchema.default('vi'),
  stream: z.boolean().default(false),
});

export const CodeRequestSchema = AnalyzeRequestSchema.extend({
  language: LanguageSchema.default('vi').describe('Language of the explanation (vi or en)'),
});

export const DebugRequestSchema = z
  .object({
    code: z.string().default('').describe('The code that fails'),
    error: z.string().default('').describe('The error message or stack trace'),
    message: z.string().default('').describe('Anything else (or everything, in one text)'),
    session_id: sessionId,
    language: LanguageSchema.default('vi'),
    stream: z.boolean().default(false),
  })
  .refine((b) => b.code.trim() !== '' || b.error.trim() !== '' || b.message.trim() !== '', {
    message: 'give `code` and `error` (or `message`)',
    path: ['code'],
  });

export const TranslateRequestSchema = z.object({
  text: z.string().min(1),
  source_lang: z.string().min(2).max(16).default('auto'),
  target_lang: z.string().min(2).max(16).default('vi'),
  session_id: sessionId,
});

export const TranslateResponseSchema = TurnResponseSchema.extend({
  source_text: z.string(),
  target_lang: z.string(),
  translated: z.string(),
});

export const SummarizeRequestSchema = z.object({
  text: z.string().min(1),
  max_tokens: maxTokens.optional(),
  session_id: sessionId,
  language: LanguageSchema.default('vi'),
});

export const ChatRawRequestSchema = z.object({
  messages: z.array(OpenAiMessageSchema).min(1),
  system: z.string().nullable().default(null).describe('Replaces the system prompt (and any system message)'),
  force_llm: UpstreamIdSchema.nullable().default(null),
  max_tokens: maxTokens.default(2048),
  temperature: temperature.default(0.3),
});

export const ChatRawResponseSchema = z.object({
  response: z.string(),
  model: UpstreamIdSchema,
  upstream_model: z.string(),
  finish_reason: z.string(),
  usage: z.object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
  }),
  fell_back_from: z.array(UpstreamIdSchema),
  processing_time_ms: z.number().int(),
});

export const ChatCompletionRequestSchema = chatCompletionRequestSchema({
  model: z
    .string()
    .nullable()
    .default(null)
    .describe('alpha4_service, beta3_service or beta_service; null lets the agent choose'),
  temperature: 0.7,
  maxTokens: 2048,
}).extend({
  system: z.string().nullable().default(null),
});

/** Any id: one that no session could have (too long, odd characters) is simply not found (404). */
export const SessionParamsSchema = z.object({ session_id: z.string() });

export const SessionSummarySchema = z.object({
  session_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  expires_at: z.string(),
  message_count: z.number().int(),
  last_intent: z.string().nullable(),
  last_model: z.string().nullable(),
});

export const SessionListSchema = z.object({
  sessions: z.array(SessionSummarySchema),
  total: z.number().int(),
  ttl_seconds: z.number().int(),
});

export const SessionDetailSchema = SessionSummarySchema.extend({
  messages: z.array(
    z.object({
      role: z.enum(['user', 'assistant']),
      content: z.string(),
      timestamp: z.string(),
      intent: z.string().optional(),
      model: z.string().optional(),
    }),
  ),
});

export const DeletedSchema = z.object({ deleted: z.string() });
