import { performance } from 'node:perf_hooks';
import { createKit, serviceAuth, type KitApp, type Logger, type Resource } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { SttBackends, type SttBackend } from './adapters/backend.js';
import { pocketsphinxBackend, whisperBackend, type BackendHooks } from './adapters/configured-backends.js';
import type { SttConfig } from './config.js';
import type { BackendId } from './domain/types.js';
import { createSttMetrics } from './metrics.js';
import { healthRoute, rootRoute, statusRoute } from './routes/info.js';
import { ProcessingStats, type SttRuntime } from './routes/runtime.js';
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
  /** Each backend configured, loaded after the server listens. */
  readonly backends: ReadonlyMap<BackendId, Resource<SttBackend>>;
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
  const auth = serviceAuth(config, { scope: 'stt', tokenEnv: 'STT_API_TOKEN', token: config.STT_API_TOKEN });
  const kit = createKit({
    service: 'stt',
    title: 'ClinicalSuite speech to text',
    version: STT_VERSION,
    description:
      'Transcribes WAV, MP3 and OGG speech (Vietnamese with a Whisper model, English with pocketsphinx or Whisper) ' +
      'into text with timed segments. The agent’s POST /transcribe forwards here.',
    config,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  // Ready when one backend is: a condition of the service's own, each backend's resource optional.
  const backends = new SttBackends(
    kit.readiness.condition('starting: loading the speech recognition models'),
  );
  const metrics = createSttMetrics(kit.metrics, {
    backends: () => backends.statuses(),
    warmProcesses: () => backends.map.get('pocketsphinx')?.warmProcesses ?? 0,
  });
  const hooks: BackendHooks = {
    logger: kit.logger,
    onChange: () => backends.refresh(),
    onProcess: (start) => metrics.pocketsphinxProcesses.inc({ start }),
  };
  if (config.STT_POCKETSPHINX) backends.add(pocketsphinxBackend(config, hooks));
  if (config.whisperModelPath !== undefined)
    backends.add(whisperBackend(config, config.whisperModelPath, hooks));
  const resources = new Map<BackendId, Resource<SttBackend>>();
  for (const backend of backends.map.values()) {
    const resource = kit.resource<SttBackend>({
      name: backend.id,
      optional: true,
      open: (ctx) => backend.open(ctx),
      close: (b) => b.close(),
      failureReason: (error) => error.message,
    });
    resources.set(backend.id, resource);
  }
  const rt: SttRuntime = {
    config,
    backends: backends.map,
    readiness: kit.readiness,
    gate: kit.gate,
    metrics,
    stats: new ProcessingStats(),
    startedAt: performance.now(),
    version: STT_VERSION,
  };
  const app = kit.mount([rootRoute(rt), healthRoute(rt), statusRoute(rt), transcribeRoute(rt)]);
  return { kit: app, backends: resources, settled: () => app.settled(), close: () => app.close() };
}
