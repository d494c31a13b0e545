import { serviceAuth, buildApp, createLogger, Readiness, type KitApp, type Logger } from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { LlmClient, type ChatBackend } from '@clinicalsuite/kit/llm';
import { CodeSearchClient } from './clients/code-search.js';
import type { ReasoningConfig } from './config.js';
import { EngineUnavailableError, loadEngine, type Engine, type LoadEngineOptions } from './engine/index.js';
import { createReasoningMetrics, type ReasoningMetrics } from './metrics.js';
import { FeatureIndex } from './pipeline/clinical-map.js';
import type { PipelineDeps } from './pipeline/diagnose.js';
import { KnowledgeUnavailable, loadKnowledge, type LoadedBase } from './pipeline/knowledge.js';
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
   * Loads the knowledge bases and the engine; ready when both are. Never rejects for what is in
   * the files or on the machine: /health says why the service is not ready.
   */
  start(): Promise<void>;
  close(): Promise<void>;
}

export function buildReasoningApp(deps: ReasoningDeps): ReasoningService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: SERVICE, level: config.LOG_LEVEL });
  const readiness = new Readiness('starting: loading the knowledge bases');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  const llmBackend: ChatBackend | null =
    deps.llmBackend !== undefined
      ? deps.llmBackend
      : config.LLM_URL === undefined
        ? null
        : new LlmClient({
            baseUrl: config.LLM_URL,
            ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
            timeoutMs: config.REASONING_LLM_TIMEOUT_MS,
            retries: config.REASONING_LLM_RETRIES,
            backoffMs: config.REASONING_LLM_BACKOFF_MS,
          });
  let modelName: string | undefined = config.REASONING_LLM_MODEL;
  const resolveModel = async (signal: AbortSignal): Promise<string> => {
    if (modelName !== undefined) return modelName;
    if (llmBackend instanceof LlmClient) {
      const probe = await llmBackend.probe(signal);
      if (probe.state === 'up' && probe.models[0] !== undefined) {
        modelName = probe.models[0];
        return modelName;
      }
    }
    // Not cached: the LLM's own answer (or failure) to the completion says what is wrong.
    return 'default';
  };
  const codeSearch =
    config.CODE_SEARCH_URL === undefined
      ? null
      : new CodeSearchClient({
          baseUrl: config.CODE_SEARCH_URL,
          ...(config.CODE_SEARCH_API_TOKEN === undefined ? {} : { token: config.CODE_SEARCH_API_TOKEN }),
          timeoutMs: config.REASONING_CODE_SEARCH_TIMEOUT_MS,
          topK: config.REASONING_CODE_SEARCH_TOP_K,
          candidates: config.REASONING_CODE_SEARCH_CANDIDATES,
        });

  let pipeline: PipelineDeps | undefined;
  let bases: readonly LoadedBase[] = [];
  let engineReason: string | null = null;
  let metrics: ReasoningMetrics | undefined;
  const auth = serviceAuth(config, {
    scope: 'reasoning',
    tokenEnv: 'REASONING_API_TOKEN',
    token: config.REASONING_API_TOKEN,
  });

  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite clinical reasoning engine',
    version: VERSION,
    description:
      'Free clinical text (Vietnamese or English) and/or structured findings in, ranked diagnoses with ' +
      'calibrated probabilities out: rule pass + LLM extractor, clinical map and ICD-10-CM code lookup, a ' +
      'naive Bayes model with leak terms scored as an ONNX graph (CPU or CUDA, micro-batched), and the ' +
      'supporting and opposing findings, next findings by information gain, and timings per layer.',
    config,
    logger,
    readiness,
    gpu,
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ metrics: kitMetrics }) => {
      metrics = createReasoningMetrics(kitMetrics, {
        engineStats: () => pipeline?.engine.stats(),
        ready: () => readiness.ready,
      });
      const rt: ReasoningRuntime = {
        config,
        version: VERSION,
        readiness,
        gpu,
        metrics,
        pipeline: () => pipeline,
        bases: () => bases,
        engineReason: () => engineReason,
      };
      return [...infoRoutes(rt), diagnosisRoute(rt)];
    },
  });
  if (metrics === undefined) throw new Error('the routes were not built');
  const m: ReasoningMetrics = metrics;
  let closed = false;
  let starting: Promise<void> | undefined;

  async function createEngine(
    knowledge: Awaited<ReturnType<typeof loadKnowledge>>,
  ): Promise<{ engine: Engine; reason: string | null }> {
    const gpuAvailable = config.REASONING_DEVICE === 'auto' ? (await gpu.read()).available : false;
    const options: LoadEngineOptions = {
      device: config.REASONING_DEVICE,
      cudaDeviceId: config.REASONING_CUDA_DEVICE_ID,
      gpuAvailable,
      threads: config.REASONING_THREADS,
      batchWindowMs: config.REASONING_BATCH_WINDOW_MS,
      maxBatch: config.REASONING_MAX_BATCH,
      onRun: ({ batchSize, seconds }) => {
        m.batchSize.observe(batchSize);
        m.engineRunDuration.observe(seconds);
      },
    };
    try {
      const e = await loadEngine(knowledge.model, options);
      return { engine: e, reason: e.info.fallbackReason ?? null };
    } catch (error) {
      if (!(error instanceof EngineUnavailableError) || config.REASONING_DEVICE !== 'cuda') throw error;
      // REASONING_DEVICE=cuda on a machine where CUDA is not usable: run on the CPU and say why.
      const reason = `REASONING_DEVICE=cuda but ${error.message}; running on CPU`;
      logger.error({ err: { message: error.message } }, 'the CUDA engine cannot start; falling back to CPU');
      const e = await loadEngine(knowledge.model, { ...options, device: 'cpu' });
      return { engine: e, reason };
    }
  }

  async function load(): Promise<void> {
    let knowledge;
    try {
      knowledge = await loadKnowledge(config.kbDirs, config.REASONING_CALIBRATION);
    } catch (error) {
      if (!(error instanceof KnowledgeUnavailable)) throw error;
      bases = error.bases;
      engineReason = `not loaded: ${error.message}`;
      readiness.setNotReady(error.message);
      logger.error({ dirs: config.kbDirs }, `reasoning not ready: ${error.message}`);
      return;
    }
    bases = knowledge.bases;
    readiness.setNotReady('starting: creating the engine');
    let created;
    try {
      created = await createEngine(knowledge);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      engineReason = `the engine cannot start: ${why}`;
      readiness.setNotReady(engineReason);
      logger.error({ err: error }, 'the engine cannot start');
      return;
    }
    if (closed) {
      await created.engine.dispose();
      return;
    }
    pipeline = {
      knowledge,
      engine: created.engine,
      deviceReason: created.reason,
      index: new FeatureIndex(knowledge.features),
      llm:
        llmBackend === null
          ? null
          : {
              backend: llmBackend,
              model: resolveModel,
              maxFindings: config.REASONING_LLM_MAX_FINDINGS,
              maxTokens: config.REASONING_LLM_MAX_TOKENS,
            },
      codeSearch,
      metrics: m,
      logger,
    };
    readiness.setReady();
    logger.info(
      {
        bases: knowledge.bases.map((b) => `${b.id}@${b.version}`),
        conditions: knowledge.model.conditions.length,
        features: knowledge.model.features.length,
        engine: created.engine.info.kind,
        device: created.engine.info.device,
        fallback: created.reason,
        llm: llmBackend !== null,
        codeSearch: codeSearch !== null,
      },
      'reasoning engine ready',
    );
  }

  return {
    kit,
    metrics: m,
    get pipeline() {
      return pipeline;
    },
    start: () => (starting ??= load()),
    close: async () => {
      closed = true;
      readiness.setShuttingDown();
      await starting?.catch(() => undefined);
      await pipeline?.engine.dispose();
    },
  };
}
