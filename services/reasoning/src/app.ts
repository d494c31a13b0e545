import { createKit, createLogger, serviceAuth, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { ChatBackend } from '@clinicalsuite/kit/llm';
import { configuredLlm, extractorLlm } from './adapters/llm.js';
import { pipelineResource } from './adapters/pipeline.js';
import { configuredCodeSearch } from './clients/code-search.js';
import type { ReasoningConfig } from './config.js';
import { createReasoningMetrics, registerReasoningGauges, type ReasoningMetrics } from './metrics.js';
import type { PipelineDeps } from './pipeline/diagnose.js';
import { diagnosisRoute } from './routes/diagnosis.js';
import { API_INFO, infoRoutes } from './routes/info.js';
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

export function buildReasoningApp({ config, ...deps }: ReasoningDeps): ReasoningService {
  const kit = createKit({
    ...API_INFO,
    service: SERVICE,
    version: VERSION,
    config,
    logger: deps.logger ?? createLogger({ service: SERVICE, level: config.LOG_LEVEL }),
    auth: serviceAuth(config, {
      scope: 'reasoning',
      tokenEnv: 'REASONING_API_TOKEN',
      token: config.REASONING_API_TOKEN,
    }),
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const llm = deps.llmBackend === undefined ? configuredLlm(config, kit.metrics) : deps.llmBackend;
  const codeSearch = configuredCodeSearch(config, kit.metrics);
  const metrics = createReasoningMetrics(kit.metrics);
  const pipeline = kit.resource(
    pipelineResource({
      config,
      gpu: kit.gpu,
      metrics,
      logger: kit.logger,
      llm: extractorLlm(config, llm),
      codeSearch,
    }),
  );
  registerReasoningGauges(kit.metrics, { pipeline, readiness: kit.readiness });
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
    start: () => app.open(),
    close: () => app.close(),
  };
}
