import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { defaultModelsDir } from '@clinicalsuite/kit/models';
import { z } from 'zod';

/**
 * The text-to-speech service's configuration: the kit's variables (2 syntheses at once, a JSON
 * body of at most 64 kB) and the engines'. Parsed once, at start-up.
 */

export const ttsConfigSchema = kitConfigSchema({
  port: 8013,
  maxConcurrency: 2,
  queueSize: 64,
  queueTimeoutMs: 60_000,
  // A text of TTS_MAX_CHARS through a Piper voice takes over a minute on a small CPU node
  // (README, "Configuration").
  requestTimeoutMs: 300_000,
  // 5000 characters of Vietnamese are at most ~20 kB of UTF-8; the rest is JSON around them.
  bodyLimit: '64kb',
}).extend({
  /** The token that callers present (scope `tts`); AUTH_TOKENS_FILE may add more. */
  TTS_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Longest text, in characters (Unicode code points); longer is refused with 422. */
  TTS_MAX_CHARS: env.int({ min: 1, max: 100_000 }).default(5000),
  /** The espeak-ng binary (Debian package espeak-ng). */
  ESPEAK_PATH: z.string().min(1).default('espeak-ng'),
  /** espeak-ng voices per language (`espeak-ng --voices` lists them). */
  TTS_ESPEAK_VOICE_VI: z.string().min(1).default('vi'),
  TTS_ESPEAK_VOICE_EN: z.string().min(1).default('en-us'),
  /** ffmpeg with libmp3lame for `format: "mp3"`; without it MP3 requests answer 503. */
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  /** MP3 bitrate in kbit/s. */
  TTS_MP3_BITRATE_KBPS: env.int({ min: 32, max: 320 }).default(64),
  /** Longest a child process (espeak-ng, ffmpeg) may run before it is killed. */
  TTS_PROCESS_TIMEOUT_MS: env.ms({ min: 100 }).default(60_000),
  /**
   * Piper voices (`<voice>.onnx` with `<voice>.onnx.json` beside it) per language. Unset: the
   * voices found in TTS_VOICES_DIR (and MODEL_PATH), by the language their `.onnx.json` names.
   */
  TTS_VOICE_VI: z.string().min(1).optional(),
  TTS_VOICE_EN: z.string().min(1).optional(),
  /** Where Piper voices are looked for; default `$MODELS_DIR/tts`. */
  TTS_VOICES_DIR: z.string().min(1).optional(),
  /** `auto`: a Piper voice where one is installed for the language, else espeak-ng; `espeak`: never Piper. */
  TTS_ENGINE: z.enum(['auto', 'espeak']).default('auto'),
  /** onnxruntime intra-op threads per voice; default: the cores divided among MAX_CONCURRENCY. */
  TTS_THREADS: env.int({ min: 1, max: 64 }).optional(),
  /** Silence between sentences of Piper speech, in seconds. */
  TTS_SENTENCE_SILENCE_SECONDS: env.number({ min: 0, max: 5 }).default(0.2),
});

export type TtsConfig = z.output<typeof ttsConfigSchema> & {
  readonly voicesDir: string;
  readonly threads: number;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadTtsConfig(source: Env = process.env): TtsConfig {
  const config = loadConfig(ttsConfigSchema, source);
  const modelsDir = config.MODELS_DIR ?? defaultModelsDir(source);
  return {
    ...config,
    voicesDir: config.TTS_VOICES_DIR ?? join(modelsDir, 'tts'),
    threads: config.TTS_THREADS ?? Math.max(1, Math.floor(availableParallelism() / config.MAX_CONCURRENCY)),
  };
}
