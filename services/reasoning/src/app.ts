import { createKit, createLogger, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, type ChatBackend } from '@clinicalsuite/kit/llm';
import { extractorLlm } from './adapters/llm.js';
import { pipelineResource } from './adapters/pipeline.js';
import { CodeSearchClient } from './clients/code-search.js';
import type { ReasoningConfig } from './config.js';
import { createReasoningMetrics, type ReasoningMetrics } from './metrics.js';
import type { PipelineDeps } from './pipeline/diagnose.js';
import { diagnosisRoute } from './routes/diagnosis.js';
import { infoRoutes } from './routes/info.js';
import type { ReasoningRuntime } from './routes/runtime.js';

export const SERVICE = 'reasoning';
export const VERSION = '0.1.0';

export interface ReasoningDeps {
  readonly config: ReasoningConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly processMetrics?: boolean;
  /** The extractor's LLM (default: the LlmClient on LLM_URL; null: none). */
  readonly llmBackend?: ChatBackend | null;
}

export interface ReasoningService {
  readonly kit: KitApp;
  readonly metrics: ReasoningMetrics;
  /** The loaded pipeline, once ready. */
  readonly pipeline: PipelineDeps | undefined;
  /**
   * Loads the knowledge bases and the engine (`serve()` starts it once listening); resolves when
   * both are loaded or one was refused: /health says why the service is not ready.
   */
  start(): Promise<void>;
  close(): Promise<void>;
}

export function buildReasoningApp(deps: ReasoningDeps): ReasoningService {
  const { config } = deps;
  const auth = serviceAuth(config, {
    scope: 'reasoning',
    tokenEnv: 'REASONING_API_TOKEN',
    token: config.REASONING_API_TOKEN,
  });
  const kit = createKit({
    service: SERVICE,
    title: 'ClinicalSuite clinical reasoning engine',
    version: VERSION,
    description:
      'Free clinical text (Vietnamese or English) and/or structured findings in, ranked diagnoses with ' +
      'calibrated probabilities out: rule pass + LLM extractor, clinical map and ICD-10-CM code lookup, a ' +
      'naive Bayes model with leak terms scored as an ONNX graph (CPU or CUDA, micro-batched), and the ' +
      'supporting and opposing findings, next findings by information gain, and timings per layer.',
    config,
    logger: deps.logger ?? createLogger({ service: SERVICE, level: config.LOG_LEVEL }),
    ...(auth === undefined ? {} : { auth }),
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
  });
  const llmBackend =
    deps.llmBackend !== undefined
      ? deps.llmBackend
      : config.LLM_URL === undefined
        ? null
        : new LlmClient({
            baseUrl: config.LLM_URL,
            metrics: kit.metrics,
            ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
            timeoutMs: config.REASONING_LLM_TIMEOUT_MS,
            retries: config.REASONING_LLM_RETRIES,
            backoffMs: config.REASONING_LLM_BACKOFF_MS,
          });
  const codeSearch =
    config.CODE_SEARCH_URL === undefined
      ? null
      : new CodeSearchClient({
          baseUrl: config.CODE_SEARCH_URL,
          metrics: kit.metrics,
          ...(config.CODE_SEARCH_API_TOKEN === undefined ? {} : { token: config.CODE_SEARCH_API_TOKEN }),
          timeoutMs: config.REASONING_CODE_SEARCH_TIMEOUT_MS,
          topK: config.REASONING_CODE_SEARCH_TOP_K,
          candidates: config.REASONING_CODE_SEARCH_CANDIDATES,
        });
  const metrics = createReasoningMetrics(kit.metrics, {
    engineStats: () => pipeline.value?.engine.stats(),
    ready: () => kit.readiness.ready,
  });
  const pipeline = kit.resource(
    pipelineResource({
      config,
      gpu: kit.gpu,
      metrics,
      logger: kit.logger,
      llm: extractorLlm(config, llmBackend),
      codeSearch,
    }),
  );
  const rt: ReasoningRuntime = {
    config,
    version: VERSION,
    readiness: kit.readiness,
    gpu: kit.gpu,
    metrics,
    pipeline,
  };
  const app = kit.mount([...infoRoutes(rt), diagnosisRoute(rt)]);
  return {
    kit: app,
    metrics,
    get pipeline() {
      return pipeline.value;
    },
    start: async () => {
      app.start();
      await app.settled();
    },
    close: () => app.close(),
  };
}
