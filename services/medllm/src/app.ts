import { Readiness, serviceAuth, buildApp, createLogger, type KitApp, type Logger } from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { ManagedBackend } from './adapters/backend.js';
import type { MedllmConfig } from './config.js';
import { createMedllmMetrics } from './metrics.js';
import { chatCompletionsRoute } from './routes/chat-completions.js';
import { healthRouteFor, modelsRoute } from './routes/info.js';

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
  /** The llama-server it manages; `start()` after listening. */
  readonly backend: ManagedBackend;
}

/** llama-server's arguments for the config (host and port are added when it starts). */
export function llamaServerArgs(config: MedllmConfig): string[] {
  return [
    '--model',
    config.modelPath,
    '--mmproj',
    config.mmprojPath,
    '--alias',
    config.SERVED_MODEL_NAME,
    // llama-server splits --ctx-size over its --parallel slots; the front checks every request
    // against CONTEXT_SIZE, so each slot must hold that much.
    '--ctx-size',
    String(config.CONTEXT_SIZE * config.MAX_CONCURRENCY),
    '--parallel',
    String(config.MAX_CONCURRENCY),
    '--threads',
    String(config.threads),
    '--n-gpu-layers',
    String(config.GPU_LAYERS),
    '--no-webui',
    ...config.LLAMA_SERVER_ARGS.split(/\s+/).filter((a) => a !== ''),
  ];
}

/** The service's app, not listening, with the backend not started. */
export function buildMedllmApp(deps: MedllmAppDeps): MedllmService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: SERVICE, level: config.LOG_LEVEL });
  const readiness = new Readiness('starting: llama-server starts after the server listens');
  const backend = new ManagedBackend({
    binary: config.LLAMA_SERVER_PATH,
    args: llamaServerArgs(config),
    requiredFiles: [config.modelPath, config.mmprojPath],
    ...(config.BACKEND_URL === undefined ? {} : { externalUrl: config.BACKEND_URL }),
    readiness,
    logger,
    startTimeoutMs: config.BACKEND_START_TIMEOUT_MS,
    backoffMs: config.BACKEND_BACKOFF_MS,
    maxBackoffMs: config.BACKEND_MAX_BACKOFF_MS,
    healthIntervalMs: config.BACKEND_HEALTH_INTERVAL_MS,
    ...(config.setpriv === undefined ? {} : { setpriv: config.setpriv }),
    ...(config.backendPidFile === undefined ? {} : { pidFile: config.backendPidFile }),
  });
  const auth = serviceAuth(config, {
    scope: 'medllm',
    tokenEnv: 'MEDLLM_API_TOKEN',
    token: config.MEDLLM_API_TOKEN,
  });
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite medical multimodal LLM',
    version: VERSION,
    description:
      'OpenAI-compatible `/v1/chat/completions` over text and medical images (X-ray, CT, MRI, ' +
      'ultrasound, dermatology) in front of llama.cpp’s llama-server, run and watched by this service.',
    config,
    readiness,
    logger,
    gpuStatusPath: '/gpu/status',
    ...(auth === undefined ? {} : { auth }),
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics }) => {
      const rt = {
        config,
        backend,
        gate,
        readiness,
        now,
        startedAt,
        metrics: createMedllmMetrics(metrics, {
          running: () => gate.running,
          waiting: () => gate.waiting,
          backendReady: () => backend.ready !== undefined,
          backendRestarts: () => backend.restarts,
        }),
      };
      return [healthRouteFor(rt), modelsRoute(rt), chatCompletionsRoute(rt)];
    },
  });
  return { kit, backend };
}
