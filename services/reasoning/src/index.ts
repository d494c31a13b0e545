/** The reasoning engine's service: its app, configuration and pipeline for tests, the bench and the eval harness. */
export const SERVICE_NAME = 'reasoning';
export { buildReasoningApp, SERVICE, VERSION, type ReasoningDeps, type ReasoningService } from './app.js';
export {
  loadReasoningConfig,
  reasoningConfigSchema,
  SHIPPED_KB_DIR,
  type ReasoningConfig,
} from './config.js';
export { diagnose, ExtractorFailure, RULES_VERSION, type PipelineDeps } from './pipeline/diagnose.js';
export { FeatureIndex, mapExtracted, mapStructured } from './pipeline/clinical-map.js';
export { THRESHOLDS } from './pipeline/cut-offs.js';
export { KnowledgeUnavailable, loadKnowledge, type Knowledge } from './pipeline/knowledge.js';
export { CodeSearchClient, CodeSearchUnavailable } from './clients/code-search.js';
export * from './api/schemas.js';
