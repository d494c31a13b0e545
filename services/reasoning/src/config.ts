import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';

/**
 * The reasoning engine's configuration: the kit's variables (PORT 8006, MAX_CONCURRENCY, …) and its
 * own (REASONING_*), plus the upstreams the operator wires for `dependsOn: ['llm', 'codeSearch']`
 * (LLM_URL, CODE_SEARCH_URL) and the suite token (API_TOKEN). Parsed once at start-up; a bad value
 * stops the service with a message naming the variable.
 */

/** The shipped primary-care base (services/reasoning/kb/primary-care), from src/ or dist/ alike. */
export const SHIPPED_KB_DIR = fileURLToPath(new URL('../kb/primary-care', import.meta.url));

/** Where an HPO import is looked for under MODELS_DIR when REASONING_HPO_KB_DIR is unset. */
export const HPO_KB_SUBDIR = join('reasoning', 'hpo-kb');

const dirList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== ''),
  )
  .pipe(z.array(z.string()).min(1, 'must name at least one directory'));

export const reasoningConfigSchema = kitConfigSchema({
  port: 8006,
  maxConcurrency: 16,
  queueSize: 256,
  // Two LLM attempts and the code lookups, at the pace of the suite's default text LLM on a small CPU
  // node (services/reasoning/README.md, "What you must supply": the text LLM).
  requestTimeoutMs: 300_000,
  bodyLimit: '1mb',
}).extend({
  /** The token that callers present (scope `reasoning`); AUTH_TOKENS_FILE may add more. */
  REASONING_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Knowledge-base directories (comma-separated), merged in this order. */
  REASONING_KB_DIRS: dirList.optional(),
  /** An imported HPO base (the hpo-import CLI's --out); default $MODELS_DIR/reasoning/hpo-kb when present. */
  REASONING_HPO_KB_DIR: z.string().optional(),
  /**
   * A calibration JSON fitted for the merged base (engine/calibration.ts), or `none` for α = 1;
   * unset: the `calibration.json` of a base directory when it was fitted for the merged base
   * (pipeline/knowledge.ts). One fitted for another base or version stops the service being ready.
   */
  REASONING_CALIBRATION: z.string().min(1).optional(),
  /** Where the engine runs: auto (CUDA when a GPU is visible), cpu, cuda (falls back to CPU, reported). */
  REASONING_DEVICE: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  REASONING_CUDA_DEVICE_ID: env.int({ min: 0, max: 64 }).default(0),
  /**
   * How long the first request reaching an idle engine waits for others to share its run, in ms.
   * 0 (default): requests that arrive together, and all that arrive while a run is in flight, still
   * share runs; a lone request is not held, which is faster alone and no slower under load (README,
   * "Speed").
   */
  REASONING_BATCH_WINDOW_MS: env.number({ min: 0, max: 1000 }).default(0),
  /** Most requests in one engine run. */
  REASONING_MAX_BATCH: env.int({ min: 1, max: 4096 }).default(64),
  /** onnxruntime intra-op threads. */
  REASONING_THREADS: env.int({ min: 1, max: 64 }).default(1),
  /** Longest `text`, in characters; longer: 413. */
  REASONING_MAX_TEXT_CHARS: env.int({ min: 1, max: 1_000_000 }).default(20_000),
  /** Most structured findings in one request. */
  REASONING_MAX_FINDINGS: env.int({ min: 1, max: 10_000 }).default(200),

  /** The suite's text LLM (OpenAI-compatible) for the extractor; unset: the rule pass only. */
  LLM_URL: env.url().optional(),
  /** Bearer token for the LLM (the suite's API_TOKEN). */
  API_TOKEN: z.string().optional(),
  /** Model name sent to the LLM; default: the first model its /v1/models lists. */
  REASONING_LLM_MODEL: z.string().min(1).optional(),
  /** Deadline of one LLM call: two attempts (one retry) fit in the default REQUEST_TIMEOUT_MS. */
  REASONING_LLM_TIMEOUT_MS: env.int({ min: 100, max: 600_000 }).default(120_000),
  REASONING_LLM_RETRIES: env.int({ min: 0, max: 10 }).default(1),
  REASONING_LLM_BACKOFF_MS: env.int({ min: 0, max: 60_000 }).default(250),
  /** Most findings the LLM may return (its grammar's maxItems). */
  REASONING_LLM_MAX_FINDINGS: env.int({ min: 1, max: 128 }).default(16),
  REASONING_LLM_MAX_TOKENS: env.int({ min: 16, max: 32_768 }).default(1536),

  /** The code search service (findings and diagnoses to ICD-10-CM); unset: no code lookup (a warning). */
  CODE_SEARCH_URL: env.url().optional(),
  /** Bearer token the code search accepts (its CODE_SEARCH_API_TOKEN). */
  CODE_SEARCH_API_TOKEN: z.string().optional(),
  REASONING_CODE_SEARCH_TIMEOUT_MS: env.int({ min: 50, max: 60_000 }).default(3000),
  /** Codes per finding. */
  REASONING_CODE_SEARCH_TOP_K: env.int({ min: 1, max: 20 }).default(3),
  /** Results asked of the code search per finding before the codes whose title is the finding are put first. */
  REASONING_CODE_SEARCH_CANDIDATES: env.int({ min: 1, max: 100 }).default(50),
});

export type ReasoningConfig = z.output<typeof reasoningConfigSchema> & {
  /** Knowledge-base directories to load, in merge order (the HPO import last). */
  readonly kbDirs: readonly string[];
};

type Env = Readonly<Record<string, string | undefined>>;

export function loadReasoningConfig(source: Env = process.env): ReasoningConfig {
  const config = loadConfig(reasoningConfigSchema, source);
  const dirs = (config.REASONING_KB_DIRS ?? [SHIPPED_KB_DIR]).map((d) => resolve(d));
  let hpo = config.REASONING_HPO_KB_DIR;
  if (hpo === undefined && config.MODELS_DIR !== undefined) {
    const candidate = join(config.MODELS_DIR, HPO_KB_SUBDIR);
    if (existsSync(join(candidate, 'kb.json'))) hpo = candidate;
  }
  return { ...config, kbDirs: hpo === undefined ? dirs : [...dirs, resolve(hpo)] };
}
