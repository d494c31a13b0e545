import { z } from 'zod';
import { BACKEND_IDS, LANGUAGES } from '../domain/types.js';

/** Request and response bodies of the speech-to-text service. */

export function transcribeFormSchema(defaultLanguage: (typeof LANGUAGES)[number]) {
  return z.object({
    language: z
      .enum(LANGUAGES)
      .default(defaultLanguage)
      .describe('Language spoken in the audio: `vi` (Vietnamese) or `en` (English)'),
    backend: z
      .enum(['auto', ...BACKEND_IDS])
      .default('auto')
      .describe(
        '`auto`: the Whisper model when one is loaded and knows the language, else pocketsphinx (English only); ' +
          'or name the backend',
      ),
  });
}

export const SegmentSchema = z.object({
  start: z.number().describe('Seconds from the start of the audio'),
  end: z.number().describe('Seconds from the start of the audio'),
  text: z.string(),
  confidence: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('Mean word posterior (pocketsphinx) or mean token probability (Whisper), 0..1'),
});

export const TranscriptionSchema = z.object({
  text: z.string().describe('The whole transcript: the segments’ text joined by spaces'),
  language: z.enum(LANGUAGES),
  backend: z.enum(BACKEND_IDS),
  engine: z.string().describe('The recognition engine'),
  model: z.string().describe('The model it ran'),
  duration_seconds: z.number().describe('Length of the audio, decoded'),
  segments: z.array(SegmentSchema).describe('Utterances (pocketsphinx) or Whisper segments, in order'),
  engine_language: z
    .string()
    .nullable()
    .describe(
      'The language the engine reports it decoded in (Whisper: its language token); null for pocketsphinx',
    ),
  processing_time_ms: z.number().describe('Decoding plus recognition, queue wait excluded'),
});
export type Transcription = z.infer<typeof TranscriptionSchema>;

export const BackendStatusSchema = z.object({
  state: z.enum(['disabled', 'starting', 'ready', 'failed']),
  languages: z.array(z.enum(LANGUAGES)).describe('Languages it transcribes once ready'),
  engine: z.string(),
  model: z.string().nullable(),
  reason: z.string().nullable().describe('Why it is not ready, and what to do'),
});

export const RootSchema = z.object({
  service: z.literal('stt'),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'not_ready']),
  docs: z.string().describe('Relative path of the interactive documentation'),
  languages: z.array(z.enum(LANGUAGES)).describe('Languages transcribed now'),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('stt'),
  port: z.number().int(),
  languages: z.array(z.enum(LANGUAGES)),
  backends: z.record(z.string(), BackendStatusSchema),
  reason: z.string().optional().describe('Why the service is not ready'),
});

export const StatusSchema = z.object({
  service: z.literal('stt'),
  version: z.string(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().nullable(),
  languages: z.array(z.enum(LANGUAGES)),
  backends: z.record(z.string(), BackendStatusSchema),
  pocketsphinx_warm_processes: z.number().int().describe('pocketsphinx processes loaded and waiting'),
  limits: z.object({
    max_audio_bytes: z.number().int(),
    max_audio_seconds: z.number(),
    default_language: z.enum(LANGUAGES),
  }),
  slots: z.object({
    total: z.number().int(),
    in_use: z.number().int(),
    waiting: z.number().int(),
    queue_capacity: z.number().int(),
  }),
  transcriptions: z.number().int().describe('Transcriptions answered since start'),
  average_processing_time_ms: z.number(),
  uptime_seconds: z.number().int(),
});
