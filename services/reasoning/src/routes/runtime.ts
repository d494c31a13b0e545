import type { Readiness, Resource } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { ReasoningConfig } from '../config.js';
import type { ReasoningMetrics } from '../metrics.js';
import type { PipelineDeps } from '../pipeline/diagnose.js';

/** What the routes see of the service: the loaded pipeline (once ready) and its state. */
export interface ReasoningRuntime {
  readonly config: ReasoningConfig;
  readonly version: string;
  readonly readiness: Readiness;
  readonly gpu: GpuStatusReader;
  readonly metrics: ReasoningMetrics;
  /** The pipeline, open once the knowledge and the engine are loaded (`error` says why not). */
  readonly pipeline: Resource<PipelineDeps>;
}
