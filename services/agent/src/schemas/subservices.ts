import { z } from 'zod';
import { formOptional } from '@clinicalsuite/kit';
import { SUBSERVICE_IDS } from '../domain/subservices.js';
import { CONCRETE_INTENTS, LANGUAGES, UPSTREAM_IDS } from '../domain/types.js';
import { SessionIdSchema } from './api.js';

/**
 * Request and response bodies of the agent's sub-service endpoints (/transcribe, /ocr, /face, /tts,
 * /search, /patient), its pipelines, /status and /capabilities; and, leniently, the bodies the
 * sub-services answer with (the fields the agent reads are checked, the rest is kept).
 */

// ---------------------------------------------------------------------------------------------
// What the sub-services answer (parsed at the edge: a body without these fields is a 502).

export const SttBodySchema = z.looseObject({
  text: z.string(),
  language: z.string(),
  duration_seconds: z.number().optional(),
});

export const OcrBodySchema = z.looseObject({
  text: z.string(),
  mean_confidence: z.number().nullable().optional(),
  page_count: z.number().int().optional(),
});

export const TtsBodySchema = z.looseObject({
  audio_base64: z.string(),
  format: z.string(),
  mime_type: z.string(),
  sample_rate: z.number().int(),
  duration_seconds: z.number(),
  size_bytes: z.number().int(),
  engine: z.string(),
  voice: z.string(),
  language: z.string(),
  speed: z.number(),
});

const CodeHitBodySchema = z.looseObject({
  code: z.string(),
  type: z.string(),
  title: z.string(),
  title_vi: z.string().nullable(),
  title_en: z.string().nullable(),
  score: z.number(),
});

export const CodeSearchBodySchema = z.looseObject({
  query: z.string(),
  mode: z.string(),
  mode_reason: z.string().nullable().optional(),
  code_types: z.array(z.string()),
  missing_types: z.array(z.string()),
  warnings: z.array(z.string()),
  expansions: z.array(z.unknown()).optional(),
  results: z.array(CodeHitBodySchema),
  took_ms: z.number().optional(),
});

export const PatientBodySchema = z.looseObject({
  response: z.string(),
  patient_id: z.string(),
  session_id: z.string(),
  model: z.string().optional(),
});

export const FaceBodySchema = z.looseObject({
  success: z.boolean(),
  message: z.string(),
  data: z.looseObject({
    faces_detected: z.number().int(),
    faces: z.array(z.looseObject({ recognized: z.boolean(), person_name: z.string() })),
  }),
});

// ---------------------------------------------------------------------------------------------
// Shared pieces.

export const LanguageSchema = z.enum(LANGUAGES);

/**
 * Multipart booleans: true/false/1/0/yes/no/on/off in any case (Python's `True`/`False`, as a
 * Python client's form sends them), as the sub-services take them.
 */
export const formBool = (fallback: boolean) =>
  z
    .stringbool({
      truthy: ['true', '1', 'yes', 'on'],
      falsy: ['false', '0', 'no', 'off'],
      case: 'insensitive',
      error: 'must be true or false',
    })
    .meta({ enum: ['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'] })
    .optional()
    .transform((v) => (v === undefined ? fallback : v));

const fileField = (what: string, required = true) =>
  z
    .unknown()
    .optional()
    .meta({ type: 'string', format: 'binary', description: required ? `${what}. Required.` : what });

const IntentField = z
  .enum(CONCRETE_INTENTS)
  .describe('The intent this endpoint serves (fixed by the endpoint)');
const ModelField = z
  .enum(UPSTREAM_IDS)
  .nullable()
  .describe(
    'The LLM that answered (alpha4_service, beta3_service, beta_service), or null when no LLM was used',
  );
const ProcessingField = z.number().describe('Milliseconds from admission to the answer');
const DisclaimerField = z
  .string()
  .nullable()
  .describe('Present with clinical LLM output: it is an automated analysis, not a diagnosis; null otherwise');

export const StepSchema = z.object({
  name: z.string().describe('transcribe, ocr, code_search, analysis, consultation, code_selection, tts'),
  ms: z.number().describe('Milliseconds the step took'),
  subservice: z.enum(SUBSERVICE_IDS).nullable().describe('The sub-service the step called, if any'),
  model: z.enum(UPSTREAM_IDS).nullable().describe('The LLM that answered the step, if any'),
  skipped: z.boolean().describe('The step did not run (see detail)'),
  detail: z.string().nullable(),
});
export type Step = z.infer<typeof StepSchema>;

// ---------------------------------------------------------------------------------------------
// /transcribe

export const TranscribeFormSchema = z.object({
  file: fileField('The audio (WAV, MP3 or OGG; also FLAC, WebM), as the multipart file part `file`'),
  language: formOptional(
    LanguageSchema.default('vi').describe(
      'Language spoken: `vi` or `en`. Vietnamese needs a multilingual Whisper model in the stt service (422 otherwise)',
    ),
  ),
  analyze: formBool(false).describe('After transcription the LLM analyses the content (in `language`)'),
});

const TranscriptionFields = z
  .looseObject({
    text: z.string(),
    language: z.string(),
  })
  .describe(
    "The speech-to-text service's answer as it gave it: text, language, backend, engine, model, duration_seconds, segments[{start, end, text, confidence}], processing_time_ms",
  );

export const TranscribeResponseSchema = z.object({
  intent: IntentField,
  model: ModelField,
  text: z.string().describe('The transcript'),
  language: z.string(),
  transcription: TranscriptionFields,
  analysis: z.string().nullable().describe('The LLM analysis when `analyze` was true and there was speech'),
  disclaimer: DisclaimerField,
  steps: z.array(StepSchema),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// Code search results as the agent answers them.

export const CodeSchema = z.object({
  code: z.string(),
  type: z.string().describe('ICD10, ICPC2, CPT, SERVICE, PROCEDURE'),
  title: z.string(),
  title_vi: z.string().nullable(),
  title_en: z.string().nullable(),
  score: z.number().describe("The code search's score (BM25 or fusion); comparable within one query only"),
});

export const CandidateSchema = CodeSchema.extend({
  rank: z.number().int().describe('Best rank among the queries that found it'),
  queries: z.array(z.number().int()).describe('Indexes into `queries` of the queries that found it'),
});

export const DocumentCodesSchema = z.object({
  code_types: z.array(z.string()).describe('Types searched (requested and loaded in the code search)'),
  missing_types: z.array(z.string()).describe('Requested types the code search has no codes for'),
  warnings: z.array(z.string()),
  mode: z
    .string()
    .nullable()
    .describe('What the code search ran: hybrid or lexical (null when nothing was searched)'),
  queries: z
    .array(z.object({ query: z.string(), results: z.array(CodeSchema) }))
    .describe('The queries made from the text (lines and clauses) and what each found'),
  candidates: z
    .array(CandidateSchema)
    .describe("The distinct codes found, best first; all are the code search's"),
});

// ---------------------------------------------------------------------------------------------
// /ocr

export const OcrFormSchema = z.object({
  file: fileField('The image (JPEG, PNG, WebP, TIFF) or PDF, as the multipart file part `file`'),
  analyze: formBool(false).describe('The LLM analyses the text read'),
  search: formBool(false).describe(
    'Also search ICD-10 and ICPC-2 codes for the text read (each line and clause is a code-search query)',
  ),
  language: formOptional(LanguageSchema.default('vi').describe('Language of the analysis')),
});

export const OcrResponseSchema = z.object({
  intent: IntentField,
  model: ModelField,
  text: z.string().describe('The text read'),
  ocr: z
    .looseObject({ text: z.string() })
    .describe(
      "The OCR service's answer as it gave it: text, language, mean_confidence, pages[{lines[{text, confidence, box}]}], page_count, format, engine",
    ),
  analysis: z.string().nullable(),
  disclaimer: DisclaimerField,
  codes: DocumentCodesSchema.nullable().describe('The code search for the text when `search` was true'),
  steps: z.array(StepSchema),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// /face

export const FaceFormSchema = z.object({
  file: fileField(
    'The image with faces (JPEG or PNG), as the multipart file part `file` (or `image`)',
    false,
  ),
  image: fileField('The same image under the name `image`: send one of `file` and `image`', false),
  confidence_threshold: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a number from 0 to 1')
    .transform(Number)
    .optional()
    .describe("Minimum confidence to call a face recognized (the face service's default 0.4)"),
});

export const FaceResponseSchema = z.object({
  intent: IntentField,
  model: ModelField,
  message: z.string().describe("The face service's message (faces found, recognized)"),
  faces_detected: z.number().int(),
  faces: z
    .array(z.looseObject({ recognized: z.boolean(), person_name: z.string() }))
    .describe(
      'location{top,right,bottom,left}, recognized, person_name, confidence, distance, detection_score',
    ),
  recognition: z
    .looseObject({})
    .describe(
      "The face service's `data` as it gave it: filename, faces_detected, faces, processing_time_ms, device",
    ),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// /tts

export const TtsRequestSchema = z.object({
  text: z
    .string()
    .min(1, 'text must not be empty')
    .describe('Plain text to speak (the tts service allows 5000 characters)'),
  language: LanguageSchema.default('vi'),
  speed: z.number().min(0.5).max(2).default(1).describe('1.0 is the voice’s normal rate; 0.5 to 2.0'),
  format: z.enum(['wav', 'mp3']).default('wav').describe('WAV (16-bit PCM mono) or MP3'),
});

export const TtsResponseSchema = z.object({
  intent: IntentField,
  model: ModelField,
  audio_base64: z.string().describe('The audio file, base64'),
  format: z.string().describe('wav or mp3'),
  mime_type: z.string(),
  sample_rate: z.number().int().describe('Hz'),
  duration_seconds: z.number(),
  size_bytes: z.number().int(),
  engine: z.string().describe('espeak-ng or piper'),
  voice: z.string(),
  language: z.string(),
  speed: z.number(),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// /search

export const AGENT_CODE_TYPES = ['ICD10', 'ICPC2', 'CPT', 'SERVICE', 'PROCEDURE'] as const;
export type AgentCodeType = (typeof AGENT_CODE_TYPES)[number];

export const SearchRequestSchema = z.object({
  query: z
    .string()
    .trim()
    .min(1, 'query must not be empty')
    .describe('Free text, Vietnamese or English, or a code'),
  code_types: z
    .array(z.enum(AGENT_CODE_TYPES))
    .min(1, 'code_types must name at least one type, or be null for all')
    .nullable()
    .default(null)
    .describe(
      'Types to search; null: all. A type the code search has not loaded is listed in `missing_types`',
    ),
  top_k: z.number().int().min(1).max(100).default(10),
  hybrid: z.boolean().default(true).describe('Fuse with embeddings where the code search has a model loaded'),
});

export const SearchResponseSchema = z.object({
  intent: IntentField,
  model: ModelField,
  query: z.string(),
  mode: z.string().describe('What ran: hybrid or lexical'),
  mode_reason: z.string().nullable(),
  code_types: z.array(z.string()).describe('Types searched'),
  missing_types: z
    .array(z.string())
    .describe('Requested types with no codes loaded in the code search (reported, not an error)'),
  warnings: z.array(z.string()),
  expansions: z.array(z.unknown()),
  results: z
    .array(z.looseObject({ code: z.string(), type: z.string(), title: z.string() }))
    .describe(
      "The code search's results as it gave them: code, type, title(s), score, ranks, parent, highlights",
    ),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// /patient

export const PatientRequestSchema = z.object({
  message: z.string().trim().min(1, 'message must not be empty').describe('What the clinician says or does'),
  patient_id: z
    .string()
    .min(1)
    .describe("The case to play (the patient simulator's GET /patients lists them)"),
  session_id: SessionIdSchema.nullable()
    .default(null)
    .describe('The conversation with the simulated patient; null or unknown: a new one'),
});

export const PatientResponseSchema = z.looseObject({
  intent: IntentField,
  model: ModelField.describe('null: the agent’s LLMs are not used (the simulator calls its own LLM)'),
  response: z.string().describe("The patient's reply"),
  patient_id: z.string(),
  session_id: z.string(),
  patient_model: z.string().nullable().describe('The model the simulator reported'),
  processing_time_ms: ProcessingField,
});

// ---------------------------------------------------------------------------------------------
// Pipelines

export const PipelineFormSchema = z.object({
  file: fileField(
    'The audio (pipelines audio-*) or image (pipelines image-*), as the multipart file part `file`',
  ),
  language: formOptional(
    LanguageSchema.default('vi').describe('Language spoken / of the document, and of the answer'),
  ),
});

const PipelineBase = {
  pipeline: z.string(),
  intent: IntentField,
  model: ModelField,
  language: LanguageSchema,
  steps: z.array(StepSchema),
  processing_time_ms: ProcessingField,
};

export const AudioDiagnosisResponseSchema = z.object({
  ...PipelineBase,
  transcript: z.string(),
  analysis: z.string().describe("The LLM's symptom analysis"),
  disclaimer: z.string(),
  truncated: z.boolean().describe('The transcript was cut to fit the model’s context'),
});

export const AudioConsultResponseSchema = z.object({
  ...PipelineBase,
  transcript: z.string().describe('What the patient said (speech to text)'),
  text: z.string().describe('The consultation reply, which audio_base64 speaks'),
  audio_base64: z.string().describe('The reply spoken (WAV), base64'),
  audio: z.object({
    format: z.string(),
    mime_type: z.string(),
    sample_rate: z.number().int(),
    duration_seconds: z.number(),
    engine: z.string(),
    voice: z.string(),
  }),
  disclaimer: z.string(),
  truncated: z.boolean(),
});

export const ImageCodesResponseSchema = z.object({
  ...PipelineBase,
  text: z.string().describe('The text read by OCR'),
  codes: z
    .array(CodeSchema.extend({ reason: z.string().describe("The model's reason, from the document") }))
    .describe('The codes the model chose; every one is a code-search candidate'),
  candidates: z.array(CandidateSchema).describe('Every code the code search proposed'),
  discarded: z
    .array(z.string())
    .describe('What the model named that the code search did not propose: dropped, never returned as a code'),
  selection_error: z
    .string()
    .nullable()
    .describe('Why the model’s choice could not be read (then `codes` is empty)'),
  queries: z.array(z.string()).describe('The code-search queries made from the text'),
  code_types: z.array(z.string()),
  missing_types: z.array(z.string()),
  warnings: z.array(z.string()),
  disclaimer: z.string(),
  truncated: z.boolean(),
});

export const ImageAnalysisResponseSchema = z.object({
  ...PipelineBase,
  text: z.string().describe('The text read by OCR'),
  mean_confidence: z.number().nullable().describe("OCR's mean confidence (0..1)"),
  analysis: z.string(),
  disclaimer: z.string(),
  truncated: z.boolean(),
});

// ---------------------------------------------------------------------------------------------
// /status and /capabilities

export const SubserviceStatusSchema = z.object({
  id: z.enum(SUBSERVICE_IDS),
  name: z.string(),
  url: z.string().nullable().describe('Base URL without credentials; null when not configured'),
  state: z.enum(['up', 'not_ready', 'down', 'not_configured']),
  latency_ms: z.number().nullable().describe('Time the /health check took; null when not configured'),
  detail: z.string().nullable().describe('Why it is not up; null when up'),
});

export const LlmStatusSchema = z.object({
  id: z.enum(UPSTREAM_IDS),
  url: z.string(),
  state: z.enum(['up', 'not_ready', 'down', 'unauthorized']),
  latency_ms: z.number().nullable(),
  detail: z.string().nullable(),
  model: z
    .string()
    .nullable()
    .describe('The model name calls send (configured, or the upstream’s first listed)'),
  cooling_down: z.boolean().describe('Skipped by the router for a while after failing'),
  cooldown_until: z.string().nullable().describe('When the cooldown ends (ISO 8601)'),
  checked_at: z.string().nullable().describe('When it was last probed (ISO 8601)'),
});

export const StatusResponseSchema = z.object({
  status: z
    .enum(['ok', 'degraded', 'down'])
    .describe(
      'ok: every LLM and every configured sub-service is up; degraded: an LLM answers but something configured is not up; down: no LLM is up',
    ),
  service: z.literal('ai_agent'),
  version: z.string(),
  uptime_seconds: z.number().int(),
  checked_at: z.string().describe('ISO 8601'),
  check_ms: z.number().describe('How long the parallel checks took'),
  subservices: z.array(SubserviceStatusSchema),
  llms: z.array(LlmStatusSchema),
  sessions: z.object({
    active: z.number().int(),
    max: z.number().int(),
    ttl_seconds: z.number().int(),
    replica_local: z.literal(true).describe('Sessions live in this replica’s memory'),
  }),
  gate: z.object({
    limit: z.number().int(),
    running: z.number().int(),
    waiting: z.number().int(),
    queue_size: z.number().int(),
  }),
});

export const CapabilitySchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  gpu: z
    .boolean()
    .describe(
      "Whether it runs on a GPU in the suite's default deployment (the operator's catalogue); /gpu and each service's /gpu_status say what is there now",
    ),
  kind: z.enum(['llm', 'subservice', 'pipeline', 'feature']),
  endpoints: z.array(z.string()).describe("The agent's endpoints that use it"),
  available: z
    .boolean()
    .describe(
      'Configured (sub-services: their URL set; shell: SHELL_EXEC_ENABLED); says nothing of health (see /status)',
    ),
});

export const CapabilitiesResponseSchema = z.object({
  service: z.literal('ai_agent'),
  version: z.string(),
  capabilities: z.array(CapabilitySchema),
});
