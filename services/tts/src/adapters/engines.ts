import {
  childLimits,
  ProcessError,
  type ChildLimits,
  type OpenContext,
  type Resource,
} from '@clinicalsuite/kit';
import type { TtsConfig } from '../config.js';
import type { Language } from '../domain/language.js';
import type { Espeak, EspeakProbe } from './espeak.js';
import { probeMp3 } from './mp3.js';
import type { PiperOnnxVoice } from './piper.js';
import { loadVoices, type VoiceSources } from './voices.js';

/**
 * The engines a running service holds, opened as two kit resources after the server listens:
 * espeak-ng (required: it speaks every language and phonemizes for Piper), looked for again while
 * it is missing or lacks a voice; then the voices: ffmpeg checked for MP3, and the Piper voices
 * found loaded (or found unusable). The service is ready once both are open.
 */

/** espeak-ng is missing or lacks a voice the service needs: the message says what to do. */
export class EspeakUnusableError extends Error {
  override readonly name = 'EspeakUnusableError';
}

/** The version and voices of a usable espeak-ng; throws an EspeakUnusableError when it is not. */
export async function probeEspeak(
  espeak: Espeak,
  voices: Readonly<Record<Language, string>>,
  ctx: OpenContext,
): Promise<EspeakProbe> {
  ctx.opening('checking espeak-ng');
  let probe: EspeakProbe;
  try {
    probe = await espeak.probe(ctx.signal);
  } catch (error) {
    if (error instanceof ProcessError && error.kind === 'not_found') {
      throw new EspeakUnusableError(
        `espeak-ng not found (${espeak.binary}): install the Debian package espeak-ng or set ESPEAK_PATH`,
      );
    }
    throw new EspeakUnusableError(
      `espeak-ng does not run: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const missing = Object.entries(voices)
    .filter(([, voice]) => !probe.voices.includes(voice))
    .map(([lang, voice]) => `${voice} (for ${lang})`);
  if (missing.length > 0) {
    throw new EspeakUnusableError(
      `espeak-ng ${probe.version} lacks the voice(s) ${missing.join(', ')}: see \`espeak-ng --voices\``,
    );
  }
  return probe;
}

/** The reason a failed start gives: espeak-ng's own words, or the unexpected error. */
export function engineFailure(error: Error): string {
  return error instanceof EspeakUnusableError
    ? error.message
    : `the engines failed to start: ${error.message}`;
}

export interface VoicesOptions {
  readonly sources: VoiceSources;
  readonly ffmpeg: string;
  readonly probeTimeoutMs: number;
  /** ffmpeg's memory and CPU limits (espeak-ng has its own in its options). */
  readonly limits: ChildLimits;
}

export interface Voices {
  readonly voices: ReadonlyMap<Language, PiperOnnxVoice>;
  /** Voices found but not loaded, and why. */
  readonly problems: readonly string[];
  /** Why MP3 cannot be made, or undefined when it can. */
  readonly mp3Unavailable: string | undefined;
}

/** Where the voices are looked for, and ffmpeg, from the service's configuration. */
export function voicesOptions(config: TtsConfig): VoicesOptions {
  return {
    sources: {
      explicit: {
        ...(config.TTS_VOICE_VI === undefined ? {} : { vi: config.TTS_VOICE_VI }),
        ...(config.TTS_VOICE_EN === undefined ? {} : { en: config.TTS_VOICE_EN }),
      },
      ...(config.MODEL_PATH === undefined ? {} : { modelPath: config.MODEL_PATH }),
      dir: config.voicesDir,
      threads: config.threads,
    },
    ffmpeg: config.FFMPEG_PATH,
    probeTimeoutMs: Math.min(10_000, config.TTS_PROCESS_TIMEOUT_MS),
    limits: childLimits(config),
  };
}

/** Checks ffmpeg for MP3 and loads the Piper voices (once espeak-ng is usable). */
export async function openVoices(
  options: VoicesOptions,
  espeak: Resource<EspeakProbe>,
  ctx: OpenContext,
): Promise<Voices> {
  await ctx.untilClosed(espeak.opened());
  const mp3Unavailable = await probeMp3(options.ffmpeg, options.probeTimeoutMs, options.limits);
  if (mp3Unavailable !== undefined) ctx.logger.warn({ reason: mp3Unavailable }, 'MP3 output unavailable');
  ctx.opening('loading Piper voices');
  const { voices, problems } = await loadVoices(options.sources);
  for (const problem of problems) ctx.logger.warn({ problem }, 'Piper voice not used');
  return { voices, problems, mp3Unavailable };
}

/** The "opened" log line's fields: the Piper voice of each language, whether MP3 can be made. */
export function describeVoices({ voices, mp3Unavailable }: Voices): { fields: Record<string, unknown> } {
  return {
    fields: {
      piper: Object.fromEntries([...voices].map(([lang, v]) => [lang, v.id])),
      mp3: mp3Unavailable === undefined,
    },
  };
}

export async function closeVoices({ voices }: Voices): Promise<void> {
  for (const v of voices.values()) await v.dispose();
}

const NO_VOICES: ReadonlyMap<Language, PiperOnnxVoice> = new Map();

/** What the routes read of the engines, open or not. */
export class TtsEngines {
  constructor(
    readonly espeak: Espeak,
    private readonly probe: Resource<EspeakProbe>,
    private readonly loaded: Resource<Voices>,
  ) {}

  get espeakVersion(): string | undefined {
    return this.probe.value?.version;
  }

  get voices(): ReadonlyMap<Language, PiperOnnxVoice> {
    return this.loaded.value?.voices ?? NO_VOICES;
  }

  /** Voices found but not loaded, and why. */
  get problems(): readonly string[] {
    return this.loaded.value?.problems ?? [];
  }

  /** Why MP3 cannot be made, or undefined when it can. */
  get mp3Unavailable(): string | undefined {
    const loaded = this.loaded.value;
    return loaded === undefined ? 'not checked yet' : loaded.mp3Unavailable;
  }
}
