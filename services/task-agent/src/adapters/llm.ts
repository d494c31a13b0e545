import type { KitMetrics, Logger } from '@clinicalsuite/kit';
import { LlmClient, LlmMonitor } from '@clinicalsuite/kit/llm';
import type { TaskAgentConfig } from '../config.js';

/** The LLM the agent plans runs and answers chats with. */
export interface PlannerLlm {
  /** Its client (LLM_URL, API_TOKEN, TASK_AGENT_LLM_*), its calls counted in the service's metrics. */
  readonly llm: LlmClient;
  /** Probes it every TASK_AGENT_LLM_PROBE_MS (started and stopped by the workers). */
  readonly monitor: LlmMonitor;
  /** The model name sent to it: TASK_AGENT_MODEL, else the first the LLM lists, else `default`. */
  readonly model: () => string;
}

export function plannerLlm(
  config: TaskAgentConfig,
  metrics: KitMetrics,
  parts: { readonly logger: Logger; readonly now: () => number },
): PlannerLlm {
  const llm = new LlmClient({
    baseUrl: config.LLM_URL,
    metrics,
    ...(config.API_TOKEN === undefined ? {} : { token: config.API_TOKEN }),
    timeoutMs: config.TASK_AGENT_LLM_TIMEOUT_MS,
    retries: config.TASK_AGENT_LLM_RETRIES,
    backoffMs: config.TASK_AGENT_LLM_BACKOFF_MS,
  });
  const monitor = new LlmMonitor({
    client: llm,
    logger: parts.logger,
    intervalMs: config.TASK_AGENT_LLM_PROBE_MS,
    configuredModel: config.TASK_AGENT_MODEL,
    modelEnv: 'TASK_AGENT_MODEL',
    now: parts.now,
  });
  const model = (): string => monitor.status.model ?? config.TASK_AGENT_MODEL ?? 'default';
  return { llm, monitor, model };
}
