import { performance } from 'node:perf_hooks';
import {
  Readiness,
  serviceAuth,
  buildApp,
  childLimits,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { TtsEngines } from './adapters/engines.js';
import { Espeak } from './adapters/espeak.js';
import type { TtsConfig } from './config.js';
import type { Language } from './domain/language.js';
import { createTtsMetrics } from './metrics.js';
import { rootRoute, statusRoute, ttsHealthRoute } from './routes/info.js';
import { SynthesisStats, type TtsRuntime } from './routes/runtime.js';
import { ttsRoute } from './routes/tts.js';

export const TTS_VERSION = '1.0.0';

export interface TtsDeps {
  readonly config: TtsConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly processMetrics?: boolean;
  /** How often a missing espeak-ng is looked for again (tests shorten it). */
  readonly retryMs?: number;
}

export interface TtsService {
  readonly kit: KitApp;
  readonly engines: TtsEngines;
  /** Checks espeak-ng, ffmpeg and loads the Piper voices in the background; resolves at once. */
  start(): void;
  close(): Promise<void>;
}

/**
 * The text-to-speech service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `tts` scope (TTS_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildTtsApp(deps: TtsDeps): TtsService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'tts', level: config.LOG_LEVEL });
  const readiness = new Readiness();
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const espeak = new Espeak({
    binary: config.ESPEAK_PATH,
    timeoutMs: config.TTS_PROCESS_TIMEOUT_MS,
    // 16-bit 22050 Hz mono is 44 kB a second: an hour of speech.
    maxOutputBytes: 160 * 1024 * 1024,
    limits: childLimits(config),
  });
  const explicit: Partial<Record<Language, string>> = {
    ...(config.TTS_VOICE_VI === undefined ? {} : { vi: config.TTS_VOICE_VI }),
    ...(config.TTS_VOICE_EN === undefined ? {} : { en: config.TTS_VOICE_EN }),
  };
  const engines = new TtsEngines({
    espeak,
    espeakVoices: { vi: config.TTS_ESPEAK_VOICE_VI, en: config.TTS_ESPEAK_VOICE_EN },
    voiceSources: {
      explicit,
      ...(config.MODEL_PATH === undefined ? {} : { modelPath: config.MODEL_PATH }),
      dir: config.voicesDir,
      threads: config.threads,
    },
    ffmpeg: config.FFMPEG_PATH,
    probeTimeoutMs: Math.min(10_000, config.TTS_PROCESS_TIMEOUT_MS),
    limits: childLimits(config),
    readiness,
    logger,
    retryMs: deps.retryMs ?? 5000,
  });
  const auth = serviceAuth(config, { scope: 'tts', tokenEnv: 'TTS_API_TOKEN', token: config.TTS_API_TOKEN });
  const startedAt = performance.now();
  const kit = buildApp({
    service: 'tts',
    title: 'Text to speech',
    description:
      'Vietnamese and English speech for the agent: Piper neural voices (onnxruntime) where the model ' +
      'volume has them, espeak-ng otherwise; WAV or MP3, raw or base64.',
    version: TTS_VERSION,
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics }) => {
      const rt: TtsRuntime = {
        config,
        engines,
        readiness,
        gate,
        gpu,
        metrics: createTtsMetrics(metrics, () => engines.voices),
        stats: new SynthesisStats(),
        startedAt,
        version: TTS_VERSION,
      };
      return [rootRoute(rt), ttsHealthRoute(rt), statusRoute(rt), ttsRoute(rt)];
    },
  });
  documentAudioResponse(kit.openapi);
  return { kit, engines, start: () => engines.start(), close: () => engines.close() };
}

/** POST /tts answers audio bytes as well as JSON: both are documented on its 200. */
function documentAudioResponse(openapi: Record<string, unknown>): void {
  const paths = openapi['paths'] as Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  const ok = paths['/tts']?.['post']?.responses?.['200'] as { content?: Record<string, unknown> } | undefined;
  if (ok === undefined) return;
  const binary = { schema: { type: 'string', format: 'binary' } };
  ok.content = { ...ok.content, 'audio/wav': binary, 'audio/mpeg': binary };
}
