import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';

/**
 * The speech-to-text service's configuration: the kit's variables (2 transcriptions at once by
 * default) and the engines'. Parsed once, at start-up.
 */

/** Where Debian's `pocketsphinx-en-us` puts the US English model. */
export const DEBIAN_POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export const sttConfigSchema = kitConfigSchema({
  port: 8011,
  maxConcurrency: 2,
  queueSize: 32,
  queueTimeoutMs: 60_000,
  requestTimeoutMs: 180_000,
  // Audio comes as multipart (limited per file below); this bounds JSON bodies only.
  bodyLimit: '64kb',
  // One pocketsphinx process reads up to STT_MAX_AUDIO_SECONDS of speech: the request's deadline.
  childCpuSeconds: 180,
}).extend({
  /** The token that callers present (scope `stt`); AUTH_TOKENS_FILE may add more. */
  STT_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Largest audio file (bytes, or 25mb style): past it, 413. */
  STT_MAX_AUDIO_BYTES: env.bytes().default(25 * 1024 * 1024),
  /** Longest audio, in seconds: past it, 413. */
  STT_MAX_AUDIO_SECONDS: env.number({ min: 1, max: 14_400 }).default(300),
  /** Language when a request names none (the agent's default is Vietnamese). */
  STT_DEFAULT_LANGUAGE: z.enum(['vi', 'en']).default('vi'),
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe'),
  /** Longest ffprobe/ffmpeg run on one file, in ms (killed past it). */
  STT_DECODE_TIMEOUT_MS: env.ms({ min: 100 }).default(60_000),
  /** Longest recognition of one file, in ms (the engine's process or call is stopped past it). */
  STT_RECOGNIZE_TIMEOUT_MS: env.ms({ min: 100 }).default(150_000),

  /** pocketsphinx (English): `false` turns it off. */
  STT_POCKETSPHINX: env.bool().default(true),
  /** Debian's `pocketsphinx` package's command. */
  POCKETSPHINX_PATH: z.string().min(1).default('pocketsphinx_continuous'),
  /** Acoustic model directory, language model and dictionary (default: Debian's `pocketsphinx-en-us`). */
  POCKETSPHINX_HMM: z.string().min(1).default(join(DEBIAN_POCKETSPHINX_MODEL_DIR, 'en-us')),
  POCKETSPHINX_LM: z.string().min(1).default(join(DEBIAN_POCKETSPHINX_MODEL_DIR, 'en-us.lm.bin')),
  POCKETSPHINX_DICT: z.string().min(1).default(join(DEBIAN_POCKETSPHINX_MODEL_DIR, 'cmudict-en-us.dict')),
  /**
   * pocketsphinx processes kept started with the model loaded, waiting for the next audio; default:
   * MAX_CONCURRENCY. 0 starts a process (and loads the model) per request.
   */
  POCKETSPHINX_WARM: env.int({ min: 0, max: 64 }).optional(),

  /**
   * A whisper.cpp model (ggml-*.bin: multilingual ones such as ggml-base.bin transcribe Vietnamese;
   * *.en ones English only). Default: MODEL_PATH (what the operator and the runner set from the
   * suite's `model`). Without one, only English (pocketsphinx) is available.
   */
  STT_WHISPER_MODEL: z.string().min(1).optional(),
  /** whisper.cpp threads; default: the cores this process may use, at most 4. */
  STT_WHISPER_THREADS: env.int({ min: 1, max: 64 }).optional(),
  /**
   * whisper.cpp processes, each with the model loaded (its memory once per process); default 1.
   * Requests past them wait (inside MAX_CONCURRENCY). On CPU one process with all threads is faster
   * per request than two sharing the cores.
   */
  STT_WHISPER_PROCESSES: env.int({ min: 1, max: 16 }).default(1),
  /** Run whisper on the GPU when the runtime was built with one. */
  STT_WHISPER_GPU: env.bool().default(false),
  /** How often a missing whisper model file is looked for again. */
  MODEL_POLL_MS: env.ms({ min: 10 }).default(2000),
});

export type SttConfig = z.output<typeof sttConfigSchema> & {
  readonly whisperModelPath: string | undefined;
  readonly whisperThreads: number;
  readonly pocketsphinxWarm: number;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadSttConfig(source: Env = process.env): SttConfig {
  const config = loadConfig(sttConfigSchema, source);
  return {
    ...config,
    whisperModelPath: config.STT_WHISPER_MODEL ?? config.MODEL_PATH,
    whisperThreads: config.STT_WHISPER_THREADS ?? Math.min(4, availableParallelism()),
    pocketsphinxWarm: config.POCKETSPHINX_WARM ?? config.MAX_CONCURRENCY,
  };
}
