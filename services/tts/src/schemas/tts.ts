import { GpuSummarySchema } from '@clinicalsuite/kit/gpu';
import { z } from 'zod';
import { LANGUAGES } from '../domain/language.js';
import { MAX_SPEED, MIN_SPEED } from '../domain/speed.js';
import { characterCount, hasSpeakableContent, normalizeText } from '../domain/text.js';

/** Request and response bodies of the text-to-speech service; OpenAPI is generated from these. */

export const AUDIO_FORMATS = ['wav', 'mp3'] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

export const MIME_TYPES: Readonly<Record<AudioFormat, string>> = { wav: 'audio/wav', mp3: 'audio/mpeg' };

export const ENGINES = ['espeak-ng', 'piper'] as const;

/** POST /tts. `maxChars` is TTS_MAX_CHARS. */
export function ttsRequestSchema(maxChars: number) {
  return z.object({
    text: z
      .string()
      .describe(`The text to speak: plain text (no SSML), 1 to ${String(maxChars)} characters`)
      .superRefine((text, ctx) => {
        const n = characterCount(text);
        if (n > maxChars) {
          ctx.addIssue({
            code: 'too_big',
            origin: 'string',
            maximum: maxChars,
            inclusive: true,
            message: `text is too long: ${String(n)} characters, the limit is ${String(maxChars)}`,
          });
        } else if (!hasSpeakableContent(normalizeText(text))) {
          ctx.addIssue({
            code: 'custom',
            message: 'text is empty: it has no letter or digit to speak',
          });
        }
      }),
    language: z.enum(LANGUAGES).describe('Language of the text: `vi` (Vietnamese) or `en` (English)'),
    speed: z
      .number()
      .min(MIN_SPEED)
      .max(MAX_SPEED)
      .default(1)
      .describe(
        `Speaking rate: 1.0 is the voice's normal rate, ${String(MIN_SPEED)} to ${String(MAX_SPEED)}`,
      ),
    format: z.enum(AUDIO_FORMATS).default('wav').describe('`wav` (16-bit PCM mono) or `mp3`'),
    response_format: z
      .enum(['audio', 'base64'])
      .optional()
      .describe(
        '`audio`: the audio bytes; `base64`: a JSON body with the audio in base64. ' +
          'Unset: base64 JSON when the Accept header prefers application/json, else audio',
      ),
    engine: z
      .enum(['auto', 'espeak', 'piper'])
      .default('auto')
      .describe(
        '`auto`: the Piper neural voice of the language when one is installed, else espeak-ng; ' +
          '`espeak`: espeak-ng; `piper`: the Piper voice (422 when none is installed for the language)',
      ),
  });
}

export type TtsRequest = z.output<ReturnType<typeof ttsRequestSchema>>;

export const TtsBase64ResponseSchema = z.object({
  audio_base64: z.string().describe('The audio file (WAV or MP3), base64'),
  format: z.enum(AUDIO_FORMATS),
  mime_type: z.string(),
  sample_rate: z.number().int(),
  duration_seconds: z.number(),
  size_bytes: z.number().int(),
  engine: z.enum(ENGINES).describe('The engine that spoke'),
  voice: z.string().describe('espeak-ng voice name or Piper voice id'),
  language: z.enum(LANGUAGES),
  speed: z.number(),
  characters: z.number().int(),
  processing_time_ms: z.number(),
});
export type TtsBase64Response = z.infer<typeof TtsBase64ResponseSchema>;

const EnginesSchema = z.object({
  espeak_ng: z.object({ available: z.boolean(), version: z.string().nullable() }),
  piper: z.object({
    voices: z.array(
      z.object({ language: z.enum(LANGUAGES), voice: z.string(), sample_rate: z.number().int() }),
    ),
    problems: z.array(z.string()),
  }),
  mp3: z.object({ available: z.boolean(), reason: z.string().nullable() }),
  /** Which engine `engine: "auto"` uses, per language. */
  default_engine: z.record(z.enum(LANGUAGES), z.enum(ENGINES)),
});

export const RootResponseSchema = z.object({
  service: z.literal('tts'),
  title: z.string(),
  version: z.string(),
  port: z.number().int(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().nullable(),
  docs: z.string(),
  openapi: z.string(),
  languages: z.array(z.enum(LANGUAGES)),
  formats: z.array(z.enum(AUDIO_FORMATS)),
  max_characters: z.number().int(),
  endpoints: z.record(z.string(), z.string()),
});

export const HealthResponseSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('tts'),
  version: z.string(),
  reason: z.string().optional(),
});

export const StatusResponseSchema = z.object({
  service: z.literal('tts'),
  version: z.string(),
  status: z.enum(['ready', 'not_ready']),
  reason: z.string().nullable(),
  engines: EnginesSchema,
  concurrency: z.object({ limit: z.number().int(), running: z.number().int(), waiting: z.number().int() }),
  syntheses: z.object({
    total: z.number().int(),
    audio_seconds: z.number(),
    average_processing_ms: z.number(),
  }),
  uptime_seconds: z.number().int(),
  gpu: GpuSummarySchema,
});
export type StatusResponse = z.infer<typeof StatusResponseSchema>;
