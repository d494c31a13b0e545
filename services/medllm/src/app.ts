import { createKit, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlamaServer, llamaServerOptions, ManagedBackend, type RunningBackend } from './adapters/backend.js';
import type { MedllmConfig } from './config.js';
import { createMedllmMetrics } from './metrics.js';
import { chatCompletionsRoute } from './routes/chat-completions.js';
import { healthRouteFor, modelsRoute } from './routes/info.js';
import type { MedllmRuntime } from './routes/runtime.js';

export const SERVICE = 'medllm';
export const VERSION = '0.1.0';

export interface MedllmAppDeps {
  readonly config: MedllmConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly now?: () => Date;
  readonly processMetrics?: boolean;
}

export interface MedllmService {
  readonly kit: KitApp;
  /** The llama-server it manages (started once the server listens). */
  readonly backend: ManagedBackend;
}

/** The service's app, not listening; `serve(kit)` listens, then starts llama-server. */
export function buildMedllmApp(deps: MedllmAppDeps): MedllmService {
  const { config } = deps;
  const auth = serviceAuth(config, {
    scope: 'medllm',
    tokenEnv: 'MEDLLM_API_TOKEN',
    token: config.MEDLLM_API_TOKEN,
  });
  const kit = createKit({
    service: SERVICE,
    title: 'ClinicalSuite medical multimodal LLM',
    version: VERSION,
    description:
      'OpenAI-compatible `/v1/chat/completions` over text and medical images (X-ray, CT, MRI, ' +
      'ultrasound, dermatology) in front of llama.cpp’s llama-server, run and watched by this service.',
    config,
    startingReason: 'starting: llama-server starts after the server listens',
    gpuStatusPath: '/gpu/status',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const server = new LlamaServer(llamaServerOptions(config, kit.logger, kit.metrics));
  // Started again, after a pause that doubles while it keeps dying, when it exits or hangs.
  const llama = kit.resource<RunningBackend>({
    name: 'llama-server',
    open: (ctx) => server.open(ctx),
    close: (running) => running.stop(),
    retry: { firstPauseMs: config.BACKEND_BACKOFF_MS, maxPauseMs: config.BACKEND_MAX_BACKOFF_MS },
    failureReason: (error, retryInMs) => `${error.message}; restarting in ${String(retryInMs)} ms`,
  });
  const backend = new ManagedBackend(llama, server);
  const { gate } = kit;
  const now = deps.now ?? (() => new Date());
  const rt: MedllmRuntime = {
    config,
    backend,
    gate,
    readiness: kit.readiness,
    now,
    startedAt: now(),
    metrics: createMedllmMetrics(kit.metrics, {
      running: () => gate.running,
      waiting: () => gate.waiting,
      backendReady: () => backend.ready !== undefined,
      backendRestarts: () => backend.restarts,
    }),
  };
  return { kit: kit.mount([healthRouteFor(rt), modelsRoute(rt), chatCompletionsRoute(rt)]), backend };
}
