import { basename } from 'node:path';
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
import type { SttBackend } from './adapters/backend.js';
import { PocketsphinxBackend } from './adapters/pocketsphinx.js';
import { WhisperBackend } from './adapters/whisper.js';
import { DEBIAN_POCKETSPHINX_MODEL_DIR, type SttConfig } from './config.js';
import type { BackendId } from './domain/types.js';
import { createSttMetrics, type SttMetrics } from './metrics.js';
import { healthRoute, rootRoute, statusRoute } from './routes/info.js';
import { ProcessingStats, backendStatuses, type SttRuntime } from './routes/runtime.js';
import { transcribeRoute } from './routes/transcribe.js';

export const STT_VERSION = '0.1.0';

export interface SttDeps {
  readonly config: SttConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly processMetrics?: boolean;
}

export interface SttService {
  readonly kit: KitApp;
  readonly backends: ReadonlyMap<BackendId, SttBackend>;
  /** Starts the backends (after listening: probes answer 503 with the reason meanwhile). */
  start(): void;
  /** Resolves when every backend is ready or failed. */
  settled(): Promise<void>;
  /** Stops the engines' processes and frees the models. */
  close(): Promise<void>;
}

/**
 * The speech-to-text service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `stt` scope (STT_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildSttApp(deps: SttDeps): SttService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'stt', level: config.LOG_LEVEL });
  const readiness = new Readiness('starting: loading the speech recognition models');
  const backends = new Map<BackendId, SttBackend>();
  let metrics: SttMetrics | undefined;
  let stopped = false;
  const refresh = (): void => {
    if (stopped) return;
    const statuses = backendStatuses({ backends });
    if (statuses.some((b) => b.state === 'ready')) {
      readiness.setReady();
      return;
    }
    const reasons = statuses
      .filter((b) => b.state !== 'disabled')
      .map((b) => `${b.id}: ${b.reason ?? b.state}`);
    readiness.setNotReady(
      reasons.length === 0
        ? 'no speech recognition backend is configured (STT_POCKETSPHINX=false and no STT_WHISPER_MODEL)'
        : reasons.join('; '),
    );
  };

  let pocketsphinx: PocketsphinxBackend | undefined;
  if (config.STT_POCKETSPHINX) {
    pocketsphinx = new PocketsphinxBackend({
      binary: config.POCKETSPHINX_PATH,
      hmm: config.POCKETSPHINX_HMM,
      lm: config.POCKETSPHINX_LM,
      dict: config.POCKETSPHINX_DICT,
      warm: config.pocketsphinxWarm,
      timeoutMs: config.STT_RECOGNIZE_TIMEOUT_MS,
      limits: childLimits(config),
      logger,
      modelName: config.POCKETSPHINX_HMM.startsWith(DEBIAN_POCKETSPHINX_MODEL_DIR)
        ? 'cmusphinx en-us (Debian pocketsphinx-en-us)'
        : basename(config.POCKETSPHINX_HMM),
      onProcess: (start) => metrics?.pocketsphinxProcesses.inc({ start }),
      onChange: refresh,
    });
    backends.set('pocketsphinx', pocketsphinx);
  }
  if (config.whisperModelPath !== undefined) {
    backends.set(
      'whisper',
      new WhisperBackend({
        modelPath: config.whisperModelPath,
        threads: config.whisperThreads,
        processes: config.STT_WHISPER_PROCESSES,
        gpu: config.STT_WHISPER_GPU,
        timeoutMs: config.STT_RECOGNIZE_TIMEOUT_MS,
        pollMs: config.MODEL_POLL_MS,
        logger,
        onChange: refresh,
      }),
    );
  }

  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const auth = serviceAuth(config, { scope: 'stt', tokenEnv: 'STT_API_TOKEN', token: config.STT_API_TOKEN });
  const startedAt = performance.now();
  const kit = buildApp({
    service: 'stt',
    title: 'ClinicalSuite speech to text',
    version: STT_VERSION,
    description:
      'Transcribes WAV, MP3 and OGG speech (Vietnamese with a Whisper model, English with pocketsphinx or Whisper) ' +
      'into text with timed segments. The agent’s POST /transcribe forwards here.',
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics: kitMetrics }) => {
      metrics = createSttMetrics(kitMetrics, {
        backends: () => backendStatuses({ backends }),
        warmProcesses: () => pocketsphinx?.warmProcesses ?? 0,
      });
      const rt: SttRuntime = {
        config,
        backends,
        pocketsphinx,
        readiness,
        gate,
        metrics,
        stats: new ProcessingStats(),
        startedAt,
        version: STT_VERSION,
      };
      return [rootRoute(rt), healthRoute(rt), statusRoute(rt), transcribeRoute(rt)];
    },
  });
  refresh();
  return {
    kit,
    backends,
    start: () => {
      for (const b of backends.values()) {
        b.start();
        void b.settled().then(refresh);
      }
    },
    settled: async () => {
      await Promise.all([...backends.values()].map((b) => b.settled()));
    },
    close: async () => {
      stopped = true;
      await Promise.all([...backends.values()].map((b) => b.close()));
    },
  };
}
