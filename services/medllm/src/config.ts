import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { defaultModelsDir } from '@clinicalsuite/kit/models';
import { z } from 'zod';

/**
 * The medical multimodal LLM's configuration: the kit's variables with the spec's limits as
 * defaults (one request in work, 50 MB images, so bodies up to 64 MB) and the backend's: the GGUF
 * and its multimodal projector from the model volume, the llama-server binary, the context, the
 * image limits and the deployment's system prompt. Parsed once, at start-up.
 */

export const SERVED_MODEL = 'medmodel-1.5-4b-it';
/** The model's trained context (MedGemma 4B: 8192); CONTEXT_SIZE may not exceed it. */
export const MODEL_CONTEXT = 8192;

export const DEFAULT_SYSTEM_PROMPT =
  'You are a medical assistant supporting clinicians. Describe what you see and what it may mean, ' +
  'state your uncertainty plainly, do not give a definitive diagnosis, and recommend confirmation ' +
  'by a qualified clinician.';

export const medllmConfigSchema = kitConfigSchema({
  port: 8004,
  maxConcurrency: 1,
  queueSize: 16,
  // One generation may hold the only slot for minutes: the deadline bounds the wait instead.
  queueTimeoutMs: 300_000,
  requestTimeoutMs: 300_000,
  // A 50 MB image is ~67 MB as base64, plus the rest of the request.
  bodyLimit: '72mb',
}).extend({
  /** The token that callers present (scope `medllm`); AUTH_TOKENS_FILE may add more. */
  MEDLLM_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** The name clients send as `model` and see in responses. */
  SERVED_MODEL_NAME: z.string().min(1).default(SERVED_MODEL),
  /** The multimodal projector GGUF (mmproj) matching MODEL_PATH. */
  MMPROJ_PATH: z.string().optional(),
  /** llama.cpp's llama-server, built with `services/medllm/scripts/` (or any build with mtmd). */
  LLAMA_SERVER_PATH: z.string().default('llama-server'),
  /** Tokens of the one sequence: prompt (images included) plus max_tokens must fit. */
  CONTEXT_SIZE: env.int({ min: 256, max: MODEL_CONTEXT }).default(4096),
  /** Tokens one image costs in the context (MedGemma: 256 soft tokens plus markers). */
  IMAGE_TOKENS: env.int({ min: 1, max: 8192 }).default(280),
  MAX_IMAGES: env.int({ min: 0, max: 64 }).default(4),
  /** Decoded bytes of one image. */
  MAX_IMAGE_BYTES: env.bytes().default(50 * 1024 * 1024),
  /** Width times height of one image: larger ones (pixel bombs) are refused before decoding. */
  MAX_IMAGE_PIXELS: env.int({ min: 1 }).default(50_000_000),
  THREADS: env.int({ min: 1, max: 1024 }).optional(),
  /** Layers offloaded to the GPU (llama-server's -ngl): a number, `auto` or `all`. */
  GPU_LAYERS: z.union([z.enum(['auto', 'all']), env.int({ min: 0, max: 100_000 })]).default('auto'),
  /** The deployment's system prompt, put before every conversation; `none`: no prompt of its own. */
  SYSTEM_PROMPT: z.string().default(DEFAULT_SYSTEM_PROMPT),
  /** `rewrite` (default) hedges unhedged certainty the model did not take from the prompt; `flag` only reports it; `off`. */
  CERTAINTY_GUARD: z.enum(['rewrite', 'flag', 'off']).default('rewrite'),
  /** Deadline of one backend start (model and projector load) before it is killed and retried. */
  BACKEND_START_TIMEOUT_MS: env.ms({ min: 100 }).default(300_000),
  /** First restart delay after the backend died; doubles up to BACKEND_MAX_BACKOFF_MS. */
  BACKEND_BACKOFF_MS: env.ms({ min: 1 }).default(1000),
  BACKEND_MAX_BACKOFF_MS: env.ms({ min: 1 }).default(30_000),
  /** How often the running backend's /health is polled. */
  BACKEND_HEALTH_INTERVAL_MS: env.ms({ min: 10 }).default(5000),
  /**
   * util-linux's setpriv: llama-server runs under `setpriv --pdeathsig KILL`, so the kernel kills it
   * when this front dies, however it dies; `none`: a plain child process.
   */
  SETPRIV_PATH: z.string().min(1).default('setpriv'),
  /**
   * The running backend's pid file; a front starting kills the backend a dead previous front left
   * behind. Default `$DATA_DIR/llama-server.pid`; none without DATA_DIR (unless set here).
   */
  BACKEND_PID_FILE: z.string().min(1).optional(),
  /** Extra llama-server arguments, space-separated (e.g. `--flash-attn on`). */
  LLAMA_SERVER_ARGS: z.string().default(''),
  /**
   * An already-running OpenAI-compatible llama-server to use instead of starting one (no process
   * management; for tests and benchmarks).
   */
  BACKEND_URL: env.url().optional(),
});

type ParsedConfig = z.output<typeof medllmConfigSchema>;

export type MedllmConfig = ParsedConfig & {
  /** MODEL_PATH, or `<MODELS_DIR>/medllm/model.gguf`. */
  readonly modelPath: string;
  /** MMPROJ_PATH, or `mmproj.gguf` next to the model (the operator sets MODEL_PATH from the spec's `model`). */
  readonly mmprojPath: string;
  readonly threads: number;
  /** BACKEND_PID_FILE, or `llama-server.pid` in DATA_DIR, or undefined (no pid file). */
  readonly backendPidFile: string | undefined;
  /** SETPRIV_PATH, or undefined for `none`. */
  readonly setpriv: string | undefined;
  /** SYSTEM_PROMPT, or '' for `none`. */
  readonly systemPrompt: string;
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadMedllmConfig(source: Env = process.env): MedllmConfig {
  const config = loadConfig(medllmConfigSchema, source);
  const modelPath =
    config.MODEL_PATH ?? join(config.MODELS_DIR ?? defaultModelsDir(source), 'medllm', 'model.gguf');
  return {
    ...config,
    modelPath,
    mmprojPath: config.MMPROJ_PATH ?? join(dirname(modelPath), 'mmproj.gguf'),
    threads: config.THREADS ?? availableParallelism(),
    backendPidFile:
      config.BACKEND_PID_FILE ??
      (config.DATA_DIR === undefined ? undefined : join(config.DATA_DIR, 'llama-server.pid')),
    setpriv: config.SETPRIV_PATH === 'none' ? undefined : config.SETPRIV_PATH,
    systemPrompt: config.SYSTEM_PROMPT === 'none' ? '' : config.SYSTEM_PROMPT,
  };
}
