import type { KitMetrics } from '@clinicalsuite/kit';
import { LlmClient, type ChatBackend } from '@clinicalsuite/kit/llm';
import type { ReasoningConfig } from '../config.js';
import type { PipelineDeps } from '../pipeline/diagnose.js';

/**
 * The LLM extractor over `backend` (null: none): the model REASONING_LLM_MODEL names, else the
 * first the LLM lists (asked once it answers, then kept), else `default`.
 */
export function extractorLlm(config: ReasoningConfig, backend: ChatBackend | null): PipelineDeps['llm'] {
  if (backend === null) return null;
  let modelName: string | undefined = config.REASONING_LLM_MODEL;
  return {
    backend,
    model: async (signal) => {
      if (modelName !== undefined) return modelName;
      if (backend instanceof LlmClient) {
        const probe = await backend.probe(signal);
        if (probe.state === 'up' && probe.models[0] !== undefined) {
          modelName = probe.models[0];
          return modelName;
        }
      }
      // Not kept: the LLM's own answer (or failure) to the completion says what is wrong.
      return 'default';
    },
    maxFindings: config.REASONING_LLM_MAX_FINDINGS,
    maxTokens: config.REASONING_LLM_MAX_TOKENS,
  };
}

/** The LLM of LLM_URL (API_TOKEN, REASONING_LLM_*), its calls counted in `metrics`; null without LLM_URL. */
export function configuredLlm(config: ReasoningConfig, metrics: KitMetrics): LlmClient | null {
  if (config.LLM_URL === undefined) return null;
  return new LlmClient({
    baseUrl: config.LLM_URL,
    metrics,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.REASONING_LLM_TIMEOUT_MS,
    retries: config.REASONING_LLM_RETRIES,
    backoffMs: config.REASONING_LLM_BACKOFF_MS,
  });
}
