import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { MODEL_MANIFEST, defaultModelsDir, resolveModelPath } from '@clinicalsuite/kit/models';
import { z } from 'zod';
import { DEFAULT_SLOTS, uvThreadpoolSizeOf } from './thread-pool.js';

/**
 * The text LLM's configuration: the kit's variables (the spec's limits as defaults: 3 in work,
 * 600 s deadline, 10 MB bodies) and the model's. Parsed once, at start-up.
 */

export const DEFAULT_MODEL_ALIAS = 'alpha-2-9b-it';

export const llmConfigSchema = kitConfigSchema({
  port: 8001,
  maxConcurrency: DEFAULT_SLOTS,
  queueSize: 64,
  // A slot can be held for minutes by one generation: waiting is bounded by the deadline instead.
  queueTimeoutMs: 600_000,
  requestTimeoutMs: 600_000,
  bodyLimit: '10mb',
}).extend({
  /** The one bearer token clients send (the spec's API_TOKEN); AUTH_TOKENS_FILE may add more. */
  API_TOKEN: z.string().optional(),
  /** The model name clients use; mapped to whatever GGUF is mounted. */
  MODEL_ALIAS: z.string().min(1).default(DEFAULT_MODEL_ALIAS),
  /** Tokens per sequence (one sequence per concurrency slot): prompt plus completion must fit. */
  CONTEXT_SIZE: env.int({ min: 64, max: 1_048_576 }).default(4096),
  /** CPU threads for llama.cpp; default: the cores this process may use. Never more than cores. */
  THREADS: env.int({ min: 1, max: 1024 }).optional(),
  /** Layers offloaded to the GPU: a number, `max`, or `auto` (as many as fit). */
  GPU_LAYERS: z.union([z.enum(['auto', 'max']), env.int({ min: 0, max: 100_000 })]).default('auto'),
  /** GPU backend: `auto` (CUDA/Vulkan/Metal when present), `cuda`, `vulkan`, or `false` for CPU only. */
  GPU: z.enum(['auto', 'cuda', 'vulkan', 'metal', 'false']).default('auto'),
  /** Logical batch size of the context (tokens decoded per step, all sequences together). */
  BATCH_SIZE: env.int({ min: 1, max: 65_536 }).optional(),
  /**
   * Streamed replies write at most once per this many ms, with the text generated meanwhile in one
   * chunk; the first text goes out at once. 0: one chunk per piece of text (routes/stream-pacer.ts).
   */
  STREAM_INTERVAL_MS: env.ms({ min: 0, max: 1000 }).default(0),
  /**
   * The nice value the event loop's thread takes once the model decodes on the CPU (Linux; 0
   * leaves it as it is). llama.cpp's threads, and libuv's pool that samples, keep theirs, so the
   * event loop's work waits for a core they leave free (adapters/load-model.ts).
   */
  EVENT_LOOP_NICE: env.int({ min: 0, max: 19 }).default(10),
  /** How often a missing model file is looked for again. */
  MODEL_POLL_MS: env.ms({ min: 10 }).default(2000),
});

export type LlmConfig = z.output<typeof llmConfigSchema> & {
  /** MODEL_PATH, or the manifest's `llm` file under MODELS_DIR. */
  readonly modelPath: string;
  /**
   * The manifest's `llm` entry when `modelPath` is where the manifest puts its file (the file the
   * model store fetched and checked), else null: a model mounted elsewhere is described only by
   * its own metadata.
   */
  readonly manifestModel: { readonly id: string; readonly license: string } | null;
  readonly threads: number;
  /**
   * libuv's thread pool size, as libuv read it when the process started: node-llama-cpp's decode
   * and sampling steps run there. It cannot be changed from here (the pool exists before the first
   * line of this module runs): the entry, boot.cts, sizes it (thread-pool.ts).
   */
  readonly uvThreadpoolSize: number;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadLlmConfig(source: Env = process.env): LlmConfig {
  const config = loadConfig(llmConfigSchema, source);
  const entry = MODEL_MANIFEST['llm'];
  if (entry === undefined) throw new Error('the model manifest lacks the "llm" entry');
  const manifestPath = resolveModelPath(config.MODELS_DIR ?? defaultModelsDir(source), entry);
  const modelPath = config.MODEL_PATH ?? manifestPath;
  return {
    ...config,
    modelPath,
    manifestModel: resolve(modelPath) === manifestPath ? { id: entry.id, license: entry.license } : null,
    threads: config.THREADS ?? availableParallelism(),
    uvThreadpoolSize: uvThreadpoolSizeOf(source['UV_THREADPOOL_SIZE']),
  };
}
