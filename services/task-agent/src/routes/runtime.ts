import type { AnyRoute, ConcurrencyGate, Readiness, Resource } from '@clinicalsuite/kit';
import type { LlmClient, LlmStatus } from '@clinicalsuite/kit/llm';
import type { WorkerPool } from '../adapters/workers.js';
import type { TaskAgentConfig } from '../config.js';
import type { AnySkill } from '../domain/skills.js';
import type { TaskAgentMetrics } from '../metrics.js';
import type { TaskStore } from '../store/types.js';

/** What every route of the task agent is given. */
export interface TaskAgentRuntime {
  readonly config: TaskAgentConfig;
  readonly version: string;
  /** `require()` answers 503 until the store is open: routes that answer before then never touch it. */
  readonly store: Resource<TaskStore>;
  /** This replica's workers, once the store is open. */
  readonly workers: Resource<WorkerPool>;
  readonly skills: readonly AnySkill[];
  readonly llm: LlmClient;
  readonly llmStatus: () => LlmStatus;
  /** The model name sent to the LLM. */
  readonly model: () => string;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly metrics: TaskAgentMetrics;
  /** Epoch ms. */
  readonly now: () => number;
  readonly newSessionId: () => string;
  readonly startedAt: number;
}

/** `routes`, each answering 503 with the reason until the service is ready (GETs included). */
export function whenReady(routes: readonly AnyRoute[]): AnyRoute[] {
  return routes.map((route) => ({ ...route, requiresReady: true }));
}
