import { z } from 'zod';
import { DemographicsSchema, FACT_CATEGORIES, FINDING_KINDS, LanguageSchema } from './case.js';

/** Request and response bodies of the patient simulator. */

export const SESSION_ID = /^[A-Za-z0-9][\w.:-]{0,127}$/;
export const SessionIdSchema = z
  .string()
  .regex(
    SESSION_ID,
    'letters, digits, "_", "-", ".", ":"; 1-128 characters, starting with a letter or digit',
  );
export const PatientIdSchema = z.string().min(1).max(64);

export const PatientTurnRequestSchema = (maxMessageChars: number) =>
  z.strictObject({
    message: z
      .string()
      .trim()
      .min(1, 'message must not be empty')
      .max(maxMessageChars, `message must be at most ${maxMessageChars} characters`)
      .describe('What the clinician says or does (a question, "let me listen to your chest", an order)'),
    patient_id: PatientIdSchema.describe('The case to play (GET /patients lists them)'),
    session_id: SessionIdSchema.optional().describe(
      'The conversation; absent or unknown: a new session (with this id when given)',
    ),
  });

export const RevealedSchema = z.object({
  id: z.string(),
  category: z.enum([...FACT_CATEGORIES, ...FINDING_KINDS]),
});

export const FindingResultSchema = z.object({
  id: z.string(),
  kind: z.enum(FINDING_KINDS),
  name: z.string(),
  result: z.string(),
  value: z.number().optional(),
  unit: z.string().optional(),
  reference_range: z.string().optional(),
});

export const UsageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

export const PatientTurnResponseSchema = z.object({
  response: z.string().describe('The patient’s reply, in the case language'),
  patient_id: z.string(),
  session_id: z.string(),
  new_session: z.boolean().describe('Whether this message started the session'),
  language: LanguageSchema,
  turn: z.number().int().describe('1 for the first message of the session'),
  revealed: z
    .array(RevealedSchema)
    .describe('Facts and findings this message revealed for the first time in the session'),
  findings: z
    .array(FindingResultSchema)
    .describe('Results of what the message examined, measured or ordered (repeated when asked again)'),
  guard: z
    .enum(['none', 'regenerated', 'redacted', 'replaced'])
    .describe(
      'none; or the model named the diagnosis and the reply was regenerated, had those sentences removed, or was replaced by the case’s unsure_reply',
    ),
  model: z.string(),
  finish_reason: z.string().describe('The LLM’s finish reason of the last call (stop, length)'),
  usage: UsageSchema.describe('Tokens of every LLM call of this turn'),
  processing_time_ms: z.number().describe('From admission (a concurrency slot) to the reply'),
  llm_time_ms: z
    .number()
    .describe(
      'Of which in LLM calls (retries, backoff and regenerations included); the rest is the simulator’s',
    ),
});
export type PatientTurnResponse = z.infer<typeof PatientTurnResponseSchema>;

export const PatientSummarySchema = z.object({
  id: z.string(),
  title: z.string(),
  language: LanguageSchema,
  demographics: DemographicsSchema,
  chief_complaint: z.string(),
  facts: z.number().int(),
  findings: z.number().int(),
  origin: z.enum(['builtin', 'user']).describe('Shipped with the service, or from PATIENT_CASES_DIR'),
});

export const PatientListSchema = z.object({
  patients: z.array(PatientSummarySchema),
  total: z.number().int(),
});

export const PatientDetailSchema = PatientSummarySchema.extend({
  persona: z.object({ personality: z.string(), speech_style: z.string() }),
  askable: z
    .record(z.string(), z.number().int())
    .describe('How many facts and findings each category holds (their content is revealed only by asking)'),
});

export const TranscriptEntrySchema = z.object({
  turn: z.number().int(),
  clinician: z.string(),
  patient: z.string(),
  revealed: z.array(z.string()),
  at: z.string().describe('ISO 8601'),
});

export const SessionSchema = z.object({
  session_id: z.string(),
  patient_id: z.string(),
  language: LanguageSchema,
  turns: z.number().int(),
  created_at: z.string(),
  last_active_at: z.string(),
  expires_at: z.string(),
  revealed: z.array(RevealedSchema),
  findings: z.array(FindingResultSchema).describe('Every finding released in the session, with its result'),
  transcript: z.array(TranscriptEntrySchema),
  usage: UsageSchema,
});

export const SessionDeletedSchema = z.object({
  deleted: z.literal(true),
  session_id: z.string(),
  turns: z.number().int(),
});

export const SessionParamsSchema = z.object({ session_id: SessionIdSchema });
export const PatientParamsSchema = z.object({ patient_id: PatientIdSchema });

const LlmSchema = z.object({
  url: z.string(),
  state: z.enum(['unknown', 'up', 'not_ready', 'unauthorized', 'down']),
  model: z.string().nullable(),
});

export const RootSchema = z.object({
  service: z.literal('patient-sim'),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'not_ready']),
  docs: z.string(),
  openapi: z.string(),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('patient-sim'),
  version: z.string(),
  llm: LlmSchema,
  cases: z.number().int(),
  sessions: z.number().int(),
  reason: z.string().optional().describe('Why not ready, when not'),
});

export const StatusSchema = z.object({
  service: z.literal('patient-sim'),
  version: z.string(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().nullable(),
  llm: LlmSchema.extend({ detail: z.string().nullable(), checked_at: z.string().nullable() }),
  cases: z.object({ count: z.number().int(), ids: z.array(z.string()) }),
  sessions: z.object({
    active: z.number().int(),
    max: z.number().int(),
    ttl_seconds: z.number().int(),
    max_turns: z.number().int(),
    replica_local: z.literal(true).describe('Sessions live in this replica’s memory'),
  }),
  slots: z.object({
    total: z.number().int(),
    in_use: z.number().int(),
    waiting: z.number().int(),
    queue_capacity: z.number().int(),
  }),
  uptime_seconds: z.number().int(),
});
