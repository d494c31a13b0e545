import type { Logger } from '@clinicalsuite/kit';
import type { LlmConfig } from '../config.js';
import { recommendedPoolSize } from '../thread-pool.js';
import type { LlmEngine } from './engine.js';
import { loadLlamaEngine } from './llama-engine.js';

/** The default loader: node-llama-cpp with the config's threads, GPU, context and batch. */
export function llamaLoader(config: LlmConfig, logger: Logger): (path: string) => Promise<LlmEngine> {
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
export function checkThreadPool(config: LlmConfig, engine: LlmEngine, logger: Logger): LlmEngine {
  const model = engine.description;
  const gpu = model.gpu !== null && model.gpuLayers > 0;
  const recommended = recommendedPoolSize(gpu, config.MAX_CONCURRENCY);
  if (config.uvThreadpoolSize === recommended) return engine;
  const where = gpu ? `on the GPU (${model.gpu})` : 'on the CPU';
  logger.warn(
    { uv_threadpool_size: config.uvThreadpoolSize, recommended },
    `libuv's thread pool has ${config.uvThreadpoolSize} threads; decoding ${where} with ` +
      `${config.MAX_CONCURRENCY} slots runs best with ${recommended}. Start it with ` +
      `UV_THREADPOOL_SIZE=${recommended}; libuv reads it only as the process starts. Its entry, ` +
      'dist/boot.cjs, picks the size when the variable is unset (services/llm/README.md, Speed)',
  );
  return engine;
}
