import { basename } from 'node:path';
import {
  ModelHost,
  Readiness,
  serviceAuth,
  buildApp,
  createLogger,
  type KitApp,
  type Logger,
} from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { LlmEngine, ModelDescription } from './adapters/engine.js';
import { loadLlamaEngine } from './adapters/llama-engine.js';
import type { LlmConfig } from './config.js';
import { createLlmMetrics } from './metrics.js';
import { chatCompletionsRoute } from './routes/chat-completions.js';
import { chatRoute } from './routes/chat.js';
import { healthRouteFor, modelsRoute, statusRoute } from './routes/info.js';
import type { LlmRuntime } from './routes/runtime.js';
import { recommendedPoolSize } from './thread-pool.js';

export const SERVICE = 'llm';
export const VERSION = '0.1.0';

export interface LlmAppDeps {
  readonly config: LlmConfig;
  readonly logger?: Logger;
  /** Loads the model (default: node-llama-cpp with the config's threads, GPU and context). */
  readonly load?: (path: string) => Promise<LlmEngine>;
  readonly gpu?: GpuStatusReader;
  readonly now?: () => Date;
  /** Process metrics (default on). */
  readonly processMetrics?: boolean;
}

export interface LlmService {
  readonly kit: KitApp;
  /** Waits for the model file and loads it; `start()` after listening. */
  readonly host: ModelHost<LlmEngine>;
}

/** The text LLM's app, not listening and with the model not yet loading (call `host.start()`). */
export function buildLlmApp(deps: LlmAppDeps): LlmService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: SERVICE, level: config.LOG_LEVEL });
  const readiness = new Readiness('starting: the model loads after the server listens');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const load = deps.load ?? defaultLoader(config, logger);
  const host = new ModelHost<LlmEngine>({
    modelPaths: [config.modelPath],
    readiness,
    logger,
    pollMs: config.MODEL_POLL_MS,
    hint: 'run `npm run models -- fetch llm` or mount the GGUF there',
    load: async ([path]) => {
      const engine = await load(path ?? config.modelPath);
      checkThreadPool(config, engine.description, logger);
      return engine;
    },
    describe: (engine) => ({
      fields: {
        contextSize: engine.contextSize,
        chatTemplate: engine.description.chatTemplate.wrapper,
        gpu: engine.description.gpu,
      },
      warnings: engine.description.chatTemplate.note === null ? [] : [engine.description.chatTemplate.note],
    }),
  });
  // Never open (the spec): API_TOKEN and the tokens file's `llm` tokens.
  const auth = serviceAuth(config, {
    scope: 'llm',
    tokenEnv: 'API_TOKEN',
    token: config.API_TOKEN,
    alwaysOn: true,
  });

  const file = basename(config.modelPath);
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite text LLM',
    version: VERSION,
    description:
      'The spec’s text LLM (`alpha2_service`): `/chat` and OpenAI-compatible `/v1/chat/completions` on ' +
      'node-llama-cpp. Every route but the probes needs `Authorization: Bearer <API_TOKEN>`.',
    config,
    readiness,
    logger,
    gpu,
    auth,
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics }) => {
      const rt: LlmRuntime = {
        config,
        host,
        now,
        startedAt,
        gate,
        metrics: createLlmMetrics(metrics, {
          running: () => gate.running,
          waiting: () => gate.waiting,
          kvCacheUsage: () => {
            const engine = host.engine;
            if (engine === undefined) return 0;
            return engine.contextTokensInUse() / (engine.contextSize * config.MAX_CONCURRENCY);
          },
          batching: () => host.engine?.batching() ?? { steps: 0, sequences: 0 },
        }),
        modelNames: () => [config.MODEL_ALIAS, file, file.replace(/\.gguf$/i, '')],
      };
      return [
        healthRouteFor(rt, readiness),
        statusRoute(rt, readiness, gpu),
        modelsRoute(rt),
        chatRoute(rt),
        chatCompletionsRoute(rt),
      ];
    },
  });
  return { kit, host };
}

function defaultLoader(config: LlmConfig, logger: Logger): (path: string) => Promise<LlmEngine> {
  return (path) =>
    loadLlamaEngine({
      modelPath: path,
      sequences: config.MAX_CONCURRENCY,
      contextSize: config.CONTEXT_SIZE,
      threads: config.threads,
      gpu: config.GPU === 'false' ? false : config.GPU,
      gpuLayers: config.GPU_LAYERS,
      batchSize: config.BATCH_SIZE,
      log: (level, message) => logger[level]({ component: 'llama.cpp' }, message),
    });
}

/**
 * Once the model is loaded, where decoding runs is known. A thread pool that does not suit it (set
 * by hand, or the entry guessed the device wrong) gets a warning naming the size to start with.
 */
function checkThreadPool(config: LlmConfig, model: ModelDescription, logger: Logger): void {
  const gpu = model.gpu !== null && model.gpuLayers > 0;
  const recommended = recommendedPoolSize(gpu, config.MAX_CONCURRENCY);
  if (config.uvThreadpoolSize === recommended) return;
  const where = gpu ? `on the GPU (${model.gpu})` : 'on the CPU';
  logger.warn(
    { uv_threadpool_size: config.uvThreadpoolSize, recommended },
    `libuv's thread pool has ${config.uvThreadpoolSize} threads; decoding ${where} with ` +
      `${config.MAX_CONCURRENCY} slots runs best with ${recommended}. Start it with ` +
      `UV_THREADPOOL_SIZE=${recommended}; libuv reads it only as the process starts. Its entry, ` +
      'dist/boot.cjs, picks the size when the variable is unset (services/llm/README.md, Speed)',
  );
}
