import { basename } from 'node:path';
import { createKit, serviceAuth, type KitApp, type Logger, type ModelHost } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { LlmEngine } from './adapters/engine.js';
import { checkThreadPool, llamaLoader, yieldEventLoopToDecode } from './adapters/load-model.js';
import type { LlmConfig } from './config.js';
import { createLlmMetrics } from './metrics.js';
import { chatCompletionsRoute } from './routes/chat-completions.js';
import { chatRoute } from './routes/chat.js';
import { API_INFO, healthRouteFor, modelsRoute, statusRoute } from './routes/info.js';
import type { LlmRuntime } from './routes/runtime.js';

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
  /** Waits for the model file and loads it (the kit starts it once the server listens). */
  readonly host: ModelHost<LlmEngine>;
}

/** The text LLM's app, not listening; `serve(kit)` listens, then loads the model. */
export function buildLlmApp(deps: LlmAppDeps): LlmService {
  const { config } = deps;
  // Never open (the spec): API_TOKEN and the tokens file's `llm` tokens.
  const auth = serviceAuth(config, {
    scope: 'llm',
    tokenEnv: 'API_TOKEN',
    token: config.API_TOKEN,
    alwaysOn: true,
  });
  const kit = createKit({
    service: SERVICE,
    ...API_INFO,
    version: VERSION,
    config,
    auth,
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const { logger, gate, readiness, gpu } = kit;
  const load = deps.load ?? llamaLoader(config, logger);
  const host = kit.model<LlmEngine>({
    modelPaths: [config.modelPath],
    pollMs: config.MODEL_POLL_MS,
    hint: 'run `npm run models -- fetch llm` or mount the GGUF there',
    load: async ([path]) =>
      yieldEventLoopToDecode(
        config,
        checkThreadPool(config, await load(path ?? config.modelPath), logger),
        logger,
      ),
    describe: (engine) => ({
      fields: {
        contextSize: engine.contextSize,
        chatTemplate: engine.description.chatTemplate.wrapper,
        gpu: engine.description.gpu,
      },
      warnings: engine.description.chatTemplate.note === null ? [] : [engine.description.chatTemplate.note],
    }),
  });
  const file = basename(config.modelPath);
  const now = deps.now ?? (() => new Date());
  const rt: LlmRuntime = {
    config,
    host,
    now,
    startedAt: now(),
    gate,
    metrics: createLlmMetrics(kit.metrics, {
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
  return {
    kit: kit.mount([
      healthRouteFor(rt, readiness),
      statusRoute(rt, readiness, gpu),
      modelsRoute(rt),
      chatRoute(rt),
      chatCompletionsRoute(rt),
    ]),
    host,
  };
}
