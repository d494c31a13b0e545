import type { Logger, ResourceSpec } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { CodeSearchClient } from '../clients/code-search.js';
import type { ReasoningConfig } from '../config.js';
import {
  EngineUnavailableError,
  loadEngine,
  type CompiledModel,
  type Engine,
  type LoadEngineOptions,
} from '../engine/index.js';
import type { ReasoningMetrics } from '../metrics.js';
import { FeatureIndex } from '../pipeline/clinical-map.js';
import type { PipelineDeps } from '../pipeline/diagnose.js';
import { KnowledgeUnavailable, loadKnowledge, type LoadedBase } from '../pipeline/knowledge.js';

/**
 * The reasoning pipeline as a kit resource: the knowledge bases read, validated and compiled
 * (`starting: loading the knowledge bases`), then the engine created on the device asked for
 * (`starting: creating the engine`); disposed on close. Either failure leaves the service not
 * ready with the reason until a restart; the bases read stay listed in /health.
 */

export interface PipelineResourceDeps {
  readonly config: ReasoningConfig;
  readonly gpu: GpuStatusReader;
  readonly metrics: ReasoningMetrics;
  readonly logger: Logger;
  readonly llm: PipelineDeps['llm'];
  readonly codeSearch: CodeSearchClient | null;
}

/** The engine cannot start on the knowledge that loaded. */
export class EngineStartFailure extends Error {
  constructor(
    cause: unknown,
    readonly bases: readonly LoadedBase[],
  ) {
    super(`the engine cannot start: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'EngineStartFailure';
  }
}

/** The bases read at start-up, loaded or not (for /health). */
export function basesRead(
  pipeline: PipelineDeps | undefined,
  failure: Error | undefined,
): readonly LoadedBase[] {
  if (pipeline !== undefined) return pipeline.knowledge.bases;
  return failure instanceof KnowledgeUnavailable || failure instanceof EngineStartFailure
    ? failure.bases
    : [];
}

/** Why the engine is not loaded, when it failed to be. */
export function engineFailure(failure: Error | undefined): string | null {
  if (failure === undefined) return null;
  return failure instanceof EngineStartFailure ? failure.message : `not loaded: ${failure.message}`;
}

export function pipelineResource(deps: PipelineResourceDeps): ResourceSpec<PipelineDeps> {
  const { config, logger } = deps;
  return {
    name: 'the reasoning engine',
    startingReason: 'starting: loading the knowledge bases',
    open: async ({ opening }) => {
      const knowledge = await loadKnowledge(config.kbDirs, config.REASONING_CALIBRATION);
      opening('starting: creating the engine');
      const created = await startEngine(knowledge.model, deps).catch((error: unknown) => {
        throw new EngineStartFailure(error, knowledge.bases);
      });
      return {
        knowledge,
        engine: created.engine,
        deviceReason: created.reason,
        index: new FeatureIndex(knowledge.features),
        llm: deps.llm,
        codeSearch: deps.codeSearch,
        metrics: deps.metrics,
        logger,
      };
    },
    close: (pipeline) => pipeline.engine.dispose(),
    failureReason: (error) =>
      error instanceof KnowledgeUnavailable || error instanceof EngineStartFailure
        ? error.message
        : `the knowledge bases cannot be loaded: ${error.message}`,
    describe: (p) => ({
      fields: {
        bases: p.knowledge.bases.map((b) => `${b.id}@${b.version}`),
        conditions: p.knowledge.model.conditions.length,
        features: p.knowledge.model.features.length,
        engine: p.engine.info.kind,
        device: p.engine.info.device,
        fallback: p.deviceReason,
        llm: p.llm !== null,
        codeSearch: p.codeSearch !== null,
      },
    }),
  };
}

/** The engine on the device asked for; REASONING_DEVICE=cuda where CUDA is not usable runs on CPU and says why. */
async function startEngine(
  model: CompiledModel,
  { config, gpu, metrics, logger }: PipelineResourceDeps,
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
      metrics.batchSize.observe(batchSize);
      metrics.engineRunDuration.observe(seconds);
    },
  };
  try {
    const engine = await loadEngine(model, options);
    return { engine, reason: engine.info.fallbackReason ?? null };
  } catch (error) {
    if (!(error instanceof EngineUnavailableError) || config.REASONING_DEVICE !== 'cuda') throw error;
    const reason = `REASONING_DEVICE=cuda but ${error.message}; running on CPU`;
    logger.error({ err: { message: error.message } }, 'the CUDA engine cannot start; falling back to CPU');
    return { engine: await loadEngine(model, { ...options, device: 'cpu' }), reason };
  }
}
