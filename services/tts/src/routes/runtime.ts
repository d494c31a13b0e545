import { performance } from 'node:perf_hooks';
import {
  childLimits,
  GatewayTimeoutError,
  InternalError,
  PayloadTooLargeError,
  ProcessError,
  ServiceUnavailableError,
  ValidationError,
  type ConcurrencyGate,
  type Logger,
  type Readiness,
} from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { TtsEngines } from '../adapters/engines.js';
import { encodeMp3 } from '../adapters/mp3.js';
import { PiperVoiceError } from '../adapters/piper.js';
import type { TtsConfig } from '../config.js';
import type { Language } from '../domain/language.js';
import { espeakWordsPerMinute } from '../domain/speed.js';
import { chooseEngine, synthesizeWithPiper, type EngineName } from '../domain/synthesis.js';
import { characterCount, normalizeText } from '../domain/text.js';
import { durationSeconds, encodeWav, type PcmAudio } from '../domain/wav.js';
import type { TtsMetrics } from '../metrics.js';
import { MIME_TYPES, type AudioFormat, type TtsRequest } from '../schemas/tts.js';

/** What the routes share, and the synthesis itself: choose the engine, speak, encode. */

export interface TtsRuntime {
  readonly config: TtsConfig;
  readonly engines: TtsEngines;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly gpu: GpuStatusReader;
  readonly metrics: TtsMetrics;
  readonly stats: SynthesisStats;
  readonly startedAt: number;
  readonly version: string;
}

export class SynthesisStats {
  total = 0;
  audioSeconds = 0;
  private totalMs = 0;

  record(ms: number, audioSeconds: number): void {
    this.total++;
    this.totalMs += ms;
    this.audioSeconds += audioSeconds;
  }

  get averageMs(): number {
    return this.total === 0 ? 0 : Math.round((this.totalMs / this.total) * 100) / 100;
  }
}

export interface Speech {
  readonly bytes: Buffer;
  readonly format: AudioFormat;
  readonly mimeType: string;
  readonly sampleRate: number;
  readonly durationSeconds: number;
  readonly engine: EngineName;
  readonly voice: string;
  readonly language: Language;
  readonly characters: number;
}

export function espeakVoiceFor(config: TtsConfig, language: Language): string {
  return language === 'vi' ? config.TTS_ESPEAK_VOICE_VI : config.TTS_ESPEAK_VOICE_EN;
}

/** Speaks one request; errors are the catalogue's (422, 503, 504, 500), never engine output. */
export async function speak(
  rt: TtsRuntime,
  request: TtsRequest,
  signal: AbortSignal,
  log: Logger,
): Promise<Speech> {
  const { config, engines, metrics } = rt;
  const text = normalizeText(request.text);
  const decision = chooseEngine(
    request.language,
    request.engine,
    engines.voices,
    config.TTS_ENGINE === 'espeak',
  );
  if (decision.engine === 'unavailable') {
    throw new ValidationError([
      { loc: ['body', 'engine'], msg: decision.reason, type: 'engine_unavailable' },
    ]);
  }
  if (request.format === 'mp3' && engines.mp3Unavailable !== undefined) {
    throw new ServiceUnavailableError(
      `MP3 output is unavailable: ${engines.mp3Unavailable}; ask for format "wav"`,
      30,
    );
  }
  const engine: EngineName = decision.engine;
  const started = performance.now();
  let audio: PcmAudio;
  let voice: string;
  try {
    if (decision.engine === 'piper') {
      voice = decision.voice.id;
      const result = await synthesizeWithPiper(decision.voice, engines.espeak, text, {
        speed: request.speed,
        sentenceSilenceSeconds: config.TTS_SENTENCE_SILENCE_SECONDS,
        signal,
      });
      if (result.missingPhonemes.length > 0) {
        // Which phonemes, not which text: the phoneme inventory is the voice's, not the patient's.
        log.debug(
          { voice, missing: result.missingPhonemes },
          'phonemes the voice has no id for were skipped',
        );
      }
      audio = result.audio;
    } else {
      voice = espeakVoiceFor(config, request.language);
      audio = await engines.espeak.synthesize(text, voice, espeakWordsPerMinute(request.speed), signal);
    }
  } catch (error) {
    throw engineError(rt, engine, error, signal, log);
  }
  const seconds = (performance.now() - started) / 1000;
  const duration = durationSeconds(audio);
  if (audio.samples.length === 0) {
    metrics.failures.inc({ engine, reason: 'empty' });
    throw new InternalError(`${engine} produced no audio for this text`);
  }
  metrics.synthesisSeconds.observe({ engine }, seconds);

  const encodeStarted = performance.now();
  const wav = encodeWav(audio);
  let bytes = wav;
  if (request.format === 'mp3') {
    try {
      bytes = await encodeMp3(
        wav,
        {
          binary: config.FFMPEG_PATH,
          bitrateKbps: config.TTS_MP3_BITRATE_KBPS,
          timeoutMs: config.TTS_PROCESS_TIMEOUT_MS,
          limits: childLimits(config),
        },
        signal,
      );
    } catch (error) {
      throw engineError(rt, 'ffmpeg', error, signal, log);
    }
  }
  metrics.encodeSeconds.observe({ format: request.format }, (performance.now() - encodeStarted) / 1000);
  const characters = characterCount(text);
  metrics.syntheses.inc({ engine, language: request.language, format: request.format });
  metrics.audioSeconds.inc({ engine }, duration);
  metrics.characters.inc({ language: request.language }, characters);
  rt.stats.record(performance.now() - started, duration);
  return {
    bytes,
    format: request.format,
    mimeType: MIME_TYPES[request.format],
    sampleRate: audio.sampleRate,
    durationSeconds: Math.round(duration * 1000) / 1000,
    engine,
    voice,
    language: request.language,
    characters,
  };
}

function engineError(
  rt: TtsRuntime,
  engine: EngineName | 'ffmpeg',
  error: unknown,
  signal: AbortSignal,
  log: Logger,
): unknown {
  // The request was aborted (client gone, deadline): the kit answers (504) or nobody listens.
  if (signal.aborted) return signal.reason;
  if (error instanceof ProcessError) {
    rt.metrics.failures.inc({ engine, reason: error.kind === 'timeout' ? 'timeout' : 'process' });
    // stderr goes to the logs only; engines do not echo the text there.
    log.warn({ engine, kind: error.kind, stderr: error.stderr }, error.message);
    if (error.kind === 'timeout') {
      return new GatewayTimeoutError(
        `${error.command} took longer than ${String(rt.config.TTS_PROCESS_TIMEOUT_MS)} ms (TTS_PROCESS_TIMEOUT_MS)`,
      );
    }
    if (error.kind === 'not_found') return new ServiceUnavailableError(error.message, 30);
    const limits = childLimits(rt.config);
    if (error.kind === 'memory_limit') {
      return new PayloadTooLargeError(
        `${error.command} needed more memory than one engine process may use ` +
          `(${String(Math.round(limits.memoryBytes / 1024 ** 2))} MiB, CHILD_MEMORY_LIMIT): send a shorter text`,
        { param: 'text' },
      );
    }
    if (error.kind === 'cpu_limit') {
      return new ValidationError([
        {
          loc: ['body', 'text'],
          msg:
            `${error.command} took more than ${String(limits.cpuSeconds)} s of CPU time (CHILD_CPU_SECONDS) ` +
            'and was stopped: send a shorter text',
          type: 'too_complex',
        },
      ]);
    }
    return new InternalError(`${engine} failed to synthesize this text`);
  }
  if (error instanceof PiperVoiceError || error instanceof Error) {
    rt.metrics.failures.inc({ engine, reason: 'model' });
    log.error({ engine, err: error }, 'synthesis failed');
    return new InternalError(`${engine} failed to synthesize this text`);
  }
  return error;
}
