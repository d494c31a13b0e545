import type { KitMetrics } from '@clinicalsuite/kit';
import type { LlmClient, LlmClientOptions, LlmMonitorOptions } from '@clinicalsuite/kit/llm';
import type { PatientSimConfig } from '../config.js';
import type { PatientSimMetrics } from '../metrics.js';

/**
 * The client of the LLM that plays the patients (LLM_URL, API_TOKEN, PATIENT_SIM_LLM_*): its calls
 * counted in the service's metrics, each retry in `retries` by reason.
 */
export function llmClientOptions(
  config: PatientSimConfig,
  metrics: KitMetrics,
  retries: PatientSimMetrics['llmRetries'],
): LlmClientOptions {
  return {
    baseUrl: config.LLM_URL,
    metrics,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.PATIENT_SIM_LLM_TIMEOUT_MS,
    retries: config.PATIENT_SIM_LLM_RETRIES,
    backoffMs: config.PATIENT_SIM_LLM_BACKOFF_MS,
    onRetry: (reason) => retries.inc({ reason }),
  };
}

/**
 * Its monitor: probed every PATIENT_SIM_LLM_PROBE_MS, the model PATIENT_SIM_MODEL or else the first
 * the LLM lists.
 */
export function llmMonitorOptions(
  config: PatientSimConfig,
  client: LlmClient,
  parts: Pick<LlmMonitorOptions, 'readiness' | 'logger' | 'now'>,
): LlmMonitorOptions {
  return {
    ...parts,
    client,
    intervalMs: config.PATIENT_SIM_LLM_PROBE_MS,
    configuredModel: config.PATIENT_SIM_MODEL,
    modelEnv: 'PATIENT_SIM_MODEL',
  };
}
