export * from './types.js';
export { LlmClient, modelIds, upstreamMessage, type LlmClientOptions, type ProbeResult } from './client.js';
export {
  LlmMonitor,
  registerLlmUpGauge,
  type LlmMonitorOptions,
  type LlmState,
  type LlmStatus,
} from './monitor.js';
export * from './openai.js';
export { createServingMetrics, type ServingMetrics, type ServingMetricsOptions } from './serving-metrics.js';
