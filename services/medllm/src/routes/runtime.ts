import type { ConcurrencyGate, Readiness } from '@clinicalsuite/kit';
import type { ManagedBackend } from '../adapters/backend.js';
import type { MedllmConfig } from '../config.js';
import type { MedllmMetrics } from '../metrics.js';

/** What the routes share. */
export interface MedllmRuntime {
  readonly config: MedllmConfig;
  readonly backend: ManagedBackend;
  readonly gate: ConcurrencyGate;
  readonly readiness: Readiness;
  readonly metrics: MedllmMetrics;
  readonly now: () => Date;
  readonly startedAt: Date;
}
