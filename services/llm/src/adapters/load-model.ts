import { getPriority, setPriority } from 'node:os';
import type { Logger } from '@clinicalsuite/kit';
import type { LlmConfig } from '../config.js';
import { recommendedPoolSize } from '../thread-pool.js';
import { decodesOnCpu, type LlmEngine } from './engine.js';
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
      uvThreadpoolSize: config.uvThreadpoolSize,
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

/**
 * On the CPU, a decode runs llama.cpp's threads on every core given to it, and they wait for each
 * other at every operation: a thread that loses its core for a moment holds all of them up. The
 * event loop's own work (HTTP, streaming, the step loop's bookkeeping) then costs the decode more
 * than its own time. So once the model decodes on the CPU, the event loop's thread takes the nice
 * value EVENT_LOOP_NICE: its work runs when a core is free (between decodes, while a step's tokens
 * are sampled on libuv's pool: lockstep.ts) and yields otherwise. On Linux, setpriority on thread
 * id 0 changes the calling thread only; libuv's pool and the threads llama.cpp starts from it keep
 * their priority. In a container the value weighs the service's own threads against each other,
 * not against other containers. Elsewhere, or with a GPU decode, nothing changes.
 */
export function yieldEventLoopToDecode(config: LlmConfig, engine: LlmEngine, logger: Logger): LlmEngine {
  const nice = config.EVENT_LOOP_NICE;
  if (nice === 0 || process.platform !== 'linux' || !decodesOnCpu(engine.description)) return engine;
  try {
    setPriority(0, Math.max(nice, getPriority(0)));
    logger.info(
      { nice: getPriority(0) },
      'decoding on the CPU: the event loop yields to llama.cpp’s threads',
    );
  } catch (error) {
    logger.warn({ err: error }, 'could not lower the event loop’s priority');
  }
  return engine;
}
