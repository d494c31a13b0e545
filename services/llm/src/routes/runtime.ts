import type { ConcurrencyGate, ModelHost } from '@clinicalsuite/kit';
import type { LlmEngine } from '../adapters/engine.js';
import type { LlmConfig } from '../config.js';
import type { LlmMetrics } from '../metrics.js';

/** What the routes share. */
export interface LlmRuntime {
  readonly config: LlmConfig;
  readonly host: ModelHost<LlmEngine>;
  readonly now: () => Date;
  readonly startedAt: Date;
  readonly gate: ConcurrencyGate;
  readonly metrics: LlmMetrics;
  /** Names a request's `model` may take. */
  readonly modelNames: () => string[];
}
