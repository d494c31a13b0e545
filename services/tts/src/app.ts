import { performance } from 'node:perf_hooks';
import { createKit, serviceAuth, childLimits, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import {
  closeVoices,
  describeVoices,
  engineFailure,
  openVoices,
  probeEspeak,
  TtsEngines,
  voicesOptions,
  type Voices,
} from './adapters/engines.js';
import { Espeak } from './adapters/espeak.js';
import type { TtsConfig } from './config.js';
import { createTtsMetrics } from './metrics.js';
import { rootRoute, statusRoute, ttsHealthRoute } from './routes/info.js';
import { SynthesisStats, type TtsRuntime } from './routes/runtime.js';
import { documentAudioResponse, ttsRoute } from './routes/tts.js';

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
  close(): Promise<void>;
}

/**
 * The text-to-speech service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `tts` scope (TTS_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildTtsApp(deps: TtsDeps): TtsService {
  const { config } = deps;
  const auth = serviceAuth(config, { scope: 'tts', tokenEnv: 'TTS_API_TOKEN', token: config.TTS_API_TOKEN });
  const kit = createKit({
    service: 'tts',
    title: 'Text to speech',
    description:
      'Vietnamese and English speech for the agent: Piper neural voices (onnxruntime) where the model ' +
      'volume has them, espeak-ng otherwise; WAV or MP3, raw or base64.',
    version: TTS_VERSION,
    config,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const espeak = new Espeak({
    binary: config.ESPEAK_PATH,
    timeoutMs: config.TTS_PROCESS_TIMEOUT_MS,
    // 16-bit 22050 Hz mono is 44 kB a second: an hour of speech.
    maxOutputBytes: 160 * 1024 * 1024,
    limits: childLimits(config),
  });
  const retryMs = deps.retryMs ?? 5000;
  const probe = kit.resource({
    name: 'espeak-ng',
    open: (ctx) =>
      probeEspeak(espeak, { vi: config.TTS_ESPEAK_VOICE_VI, en: config.TTS_ESPEAK_VOICE_EN }, ctx),
    retry: { firstPauseMs: retryMs, maxPauseMs: retryMs },
    failureReason: engineFailure,
    describe: ({ version }) => ({ fields: { version } }),
  });
  const voices = kit.resource<Voices>({
    name: 'the voices',
    open: (ctx) => openVoices(voicesOptions(config), probe, ctx),
    close: closeVoices,
    failureReason: engineFailure,
    describe: describeVoices,
  });
  const engines = new TtsEngines(espeak, probe, voices);
  const rt: TtsRuntime = {
    config,
    engines,
    readiness: kit.readiness,
    gate: kit.gate,
    gpu: kit.gpu,
    metrics: createTtsMetrics(kit.metrics, () => engines.voices),
    stats: new SynthesisStats(),
    startedAt: performance.now(),
    version: TTS_VERSION,
  };
  const app = kit.mount([rootRoute(rt), ttsHealthRoute(rt), statusRoute(rt), ttsRoute(rt)]);
  documentAudioResponse(app.openapi);
  return { kit: app, engines, close: () => app.close() };
}
