import type { Readiness } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { ReasoningConfig } from '../config.js';
import type { ReasoningMetrics } from '../metrics.js';
import type { PipelineDeps } from '../pipeline/diagnose.js';
import type { LoadedBase } from '../pipeline/knowledge.js';

/** What the routes see of the service: the loaded pipeline (once ready) and its state. */
export interface ReasoningRuntime {
  readonly config: ReasoningConfig;
  readonly version: string;
  readonly readiness: Readiness;
  readonly gpu: GpuStatusReader;
  readonly metrics: ReasoningMetrics;
  /** The pipeline, once the knowledge and the engine are loaded. */
  pipeline(): PipelineDeps | undefined;
  /** The bases read at start-up, loaded or not (for /health). */
  bases(): readonly LoadedBase[];
  /** Why the engine is not loaded, when it is not. */
  engineReason(): string | null;
}
